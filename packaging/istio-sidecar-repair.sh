#!/bin/sh
# The sidecar's take-back (docs/agent.md, "Put the VM in the mesh"; docs/security.md, "The VM
# side"): makes every directory and file root reads for istio root's or the agent's again,
# after Istio's package or VM guide gave them to istio-proxy, and says what it changed. Run as
# root before every start of istio (the drop-in registrar-agent-istio-guard.conf, just before
# istio-sidecar-check.sh), after every configure of Istio's package (the agent's package
# triggers on istio-sidecar), and by hand. It reads file metadata, /etc/passwd and the
# package's tmpfiles.d file, never a file's content, and nothing from the network.
#
# What istio-proxy (or, through a world-writable file, any local user) may have planted while
# it owned a directory, and what becomes of it. Nothing is ever followed: a link is removed or
# renamed (rename(2) and unlink(2) act on the link itself), and no file is trusted because of
# how it was created, only because of what it is now:
# - a directory root reads through (/var/lib/istio, its envoy and config) that is not a
#   directory, a link to istio-proxy's directory included ("a swapped directory"): moved aside
#   as <name>.untrusted-<time>, and a directory of the right owner made in its place;
# - the directories: owner and mode reset by systemd-tmpfiles (`d` lines: fd-based, no link
#   followed), first of all, so that nobody but root and the agent can change what is in them
#   while the files are looked at;
# - a file root reads (sidecar.env, cluster.env, the mesh config) that is a link ("a planted
#   link"): removed, its target named; one that another user owns or could write, or that has
#   other names ("a planted mode", hard links): moved aside, never given a new owner or mode in
#   place, since that would keep whatever was written into it while others could (the old
#   `Z` take-back did exactly that).
#
# usage: istio-sidecar-repair.sh [--root=DIR]   (DIR: repair DIR as if it were /)
# Exit 0: repaired, or nothing to repair. 1: something could not be repaired (named on
# stderr; istio's check then refuses to start it). 2: not set up or a usage error; nothing
# changed.
set -eu
export LC_ALL=C
me=istio-sidecar-repair
usage="usage: $me [--root=DIR]"
root=
for arg; do
  case $arg in
    --root=/*) root=${arg#--root=} ;;
    -h | --help) echo "$usage"; exit 0 ;;
    *) echo "$me: unknown argument '$arg'; $usage" >&2; exit 2 ;;
  esac
done
while [ "${root%/}" != "$root" ]; do root=${root%/}; done

agent=registrar-agent
proxy=istio-proxy
conf=registrar-agent-sidecar.conf
fail() { echo "$me: $*" >&2; exit "${code:-1}"; }

# Everything the take-back needs, before anything changes: its tmpfiles.d file, where
# systemd-tmpfiles looks for it, and the users it names.
# (Turning the sidecar on links it there: a link's target is read inside the root, as
# systemd-tmpfiles --root reads it.)
tmpfiles_conf=
for dir in /etc/tmpfiles.d /run/tmpfiles.d /usr/local/lib/tmpfiles.d /usr/lib/tmpfiles.d; do
  if [ -e "$root$dir/$conf" ] || [ -L "$root$dir/$conf" ]; then tmpfiles_conf=$dir/$conf && break; fi
done
code=2
[ -n "$tmpfiles_conf" ] || fail "no $root/etc/tmpfiles.d/$conf: the sidecar's take-back is not set up (docs/agent.md, \"Put the VM in the mesh\"); nothing changed"
conf_text=$root$tmpfiles_conf
if [ -L "$conf_text" ]; then
  link=$(readlink -- "$conf_text")
  case $link in /*) conf_text=$root$link ;; *) conf_text=${conf_text%/*}/$link ;; esac
fi
[ -r "$conf_text" ] || fail "$root$tmpfiles_conf cannot be read (a link to a file that is gone?); nothing changed"
# A copy of an older take-back (docs once had it copied into /usr/lib/tmpfiles.d) gives every
# file under the directories to the agent, keeping what istio-proxy wrote into them: refused.
if grep -Eq '^[[:space:]]*[Zz]' "$conf_text"; then
  fail "$root$tmpfiles_conf is an older take-back: its Z line gives istio-proxy's files to the agent with what it wrote in them; replace it with the package's: rm $root$tmpfiles_conf && ln -s /opt/registrar-agent/sidecar/registrar-agent-sidecar.tmpfiles.conf $root/etc/tmpfiles.d/$conf; nothing changed"
fi
grep -q "^$agent:" "$root/etc/passwd" 2>/dev/null || fail "no user $agent in $root/etc/passwd: install registrar-agent's package first; nothing changed"
grep -q "^$proxy:" "$root/etc/group" 2>/dev/null || fail "no group $proxy in $root/etc/group: install Istio's sidecar package (istio-sidecar) first; nothing changed"
code=1
agent_uid=$(sed -n "s/^$agent:[^:]*:\([0-9][0-9]*\):.*/\1/p" "$root/etc/passwd" | head -n 1)
stamp=$(date -u +%Y%m%dT%H%M%SZ)
changes=0
note() {
  echo "$me: $*"
  changes=$((changes + 1))
}

user_name() {
  name=$(sed -n "s/^\([^:]*\):[^:]*:$1:.*/\1/p" "$root/etc/passwd" | head -n 1)
  echo "${name:-an unnamed user}"
}

# A link's target as one printable line: whoever made the link chose it, and a newline in it
# would forge a line of this script's own in the journal.
link_target() {
  printf '%s' "$(readlink -- "$1")" | tr -c '[:print:]' '?'
}

# What a path is, said as the check says it: type, owner, mode.
state() {
  if [ ! -e "$1" ] && [ ! -L "$1" ]; then echo absent && return; fi
  IFS='|' read -r type uid mode <<EOF
$(stat -c '%F|%u|%a' -- "$1")
EOF
  echo "$type, owner $(user_name "$uid") (uid $uid), mode $(printf '%04d' "$mode")"
}

# Renames a path aside in its own directory (rename(2): a link is moved, not what it points to).
aside() {
  target="$1.untrusted-$stamp"
  n=1
  while [ -e "$target" ] || [ -L "$target" ]; do
    target="$1.untrusted-$stamp-$n"
    n=$((n + 1))
  done
  mv -T -- "$1" "$target"
  echo "$target"
}

tmpfiles() {
  systemd-tmpfiles ${root:+--root="$root"} --create "$conf_text" ||
    fail "systemd-tmpfiles --create $tmpfiles_conf failed (above); istio's check says what is left"
}

dirs='/var/lib/istio /var/lib/istio/envoy /var/lib/istio/config /etc/certs /run/secrets /run/secrets/tokens'
before=$(for dir in $dirs; do printf '%s|%s\n' "$dir" "$(state "$root$dir")"; done)

# 1. The directories that are directories: owner and mode reset, parents first, so that
#    what is in them stays as it is while it is judged below.
tmpfiles

# 2. A non-directory where root reads through a directory: moved aside, a directory made there.
moved=
for dir in /var/lib/istio /var/lib/istio/envoy /var/lib/istio/config; do
  full=$root$dir
  if [ -L "$full" ] || { [ -e "$full" ] && [ ! -d "$full" ]; }; then
    was=$(state "$full")
    [ -L "$full" ] && was="$was, to '$(link_target "$full")'"
    to=$(aside "$full")
    note "moved aside $full ($was) to $to: root would have read istio's files from what it points to or holds"
    moved=yes
  fi
done
[ -n "$moved" ] && tmpfiles

# 3. What the directories were, where they changed.
for dir in $dirs; do
  now=$(state "$root$dir")
  was=$(printf '%s\n' "$before" | while IFS='|' read -r path what; do
    if [ "$path" = "$dir" ]; then echo "$what"; fi
  done)
  [ "$was" = "$now" ] || note "took back $root$dir: was $was; now $now"
done

# 4. The files root reads: kept only if they are what root can trust now.
repair_file() {
  file=$1 owners=$2 hint=$3
  full=$root$file
  parent=$(stat -c '%F|%u|%a' -- "${full%/*}" 2>/dev/null || true)
  case $parent in
    "directory|0|"* | "directory|$agent_uid|"*) [ $((0${parent##*|} & 022)) -eq 0 ] ||
      fail "left $full as it is: its directory is still writable by others ($(state "${full%/*}"))" ;;
    *) fail "left $full as it is: its directory is still not root's or $agent's ($(state "${full%/*}"))" ;;
  esac
  if [ -L "$full" ]; then
    was="$(state "$full"), to '$(link_target "$full")'"
    rm -f -- "$full"
    note "removed $full ($was): root would have read whatever it points to; $hint"
    return
  fi
  [ -e "$full" ] || return 0
  IFS='|' read -r type uid mode links <<EOF
$(stat -c '%F|%u|%a|%h' -- "$full")
EOF
  why=
  case $type in
    'regular file' | 'regular empty file') ;;
    *) why="not a regular file" ;;
  esac
  if [ "$uid" != 0 ] && { [ "$owners" = root ] || [ "$uid" != "$agent_uid" ]; }; then
    why="${why:+$why; }another user owns it"
  fi
  [ $((0$mode & 022)) -eq 0 ] || why="${why:+$why; }its group or others could write it"
  [ "$links" -le 1 ] || why="${why:+$why; }it has other names (hard links)"
  [ -n "$why" ] || return 0
  was=$(state "$full")
  to=$(aside "$full")
  note "moved aside $full ($was: $why) to $to: what others wrote into it is not trusted; $hint"
}
rewritten="root no longer reads it; registrar-agent writes it again at its next bootstrap (at once: systemctl restart registrar-agent)"
repair_file /var/lib/istio/envoy/sidecar.env root "root no longer reads it; it held Istio's optional settings: if yours were in it, write them again as root (sudoedit $root/var/lib/istio/envoy/sidecar.env), reading the file moved aside for them; never copy it back"
repair_file /var/lib/istio/envoy/cluster.env root+agent "$rewritten"
repair_file /var/lib/istio/config/mesh root+agent "$rewritten"

if [ "$changes" -eq 0 ]; then
  echo "$me: nothing to repair under ${root:-/}: istio's directories are root's and $agent's, and no file root reads is a link or another user's"
else
  echo "$me: $changes change(s) above; istio's check runs at its next start (systemctl restart istio)"
fi
