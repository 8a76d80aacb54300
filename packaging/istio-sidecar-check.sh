#!/bin/sh
# Proves, before istio runs anything as root, that no file root sources or runs for it can be
# written by anyone but root or the agent's user (docs/security.md, "The VM side"). Run as root
# by istio's unit before every start of the sidecar and around its stop clean-up (the drop-in
# registrar-agent-istio-guard.conf), and by the agent's unit at the agent's start.
#
# The files: the two istio-start.sh sources as root (sidecar.env, cluster.env), the mesh config,
# the programs it runs as root, and every directory above them up to /. Each is examined with
# lstat (GNU stat without -L), from / down, and the walk stops at the first one that is not a
# directory, so nothing is ever looked at through a link. Each must be what root can trust
# *now*, whatever created it: a regular file or a directory (a link would make root read
# whatever istio-proxy points it to: attack "a planted link"; a directory swapped for a link, "a
# swapped directory"), owned by root or, where the agent writes, registrar-agent (istio-proxy
# owns what Istio's package and VM guide hand it, and gets it back at every Istio upgrade),
# writable by neither group nor others ("a planted mode": a 0666 file any local user writes; an
# ACL shows in the group bits), and a file with no other name (a hard link made while
# istio-proxy owned the directory); and below /var/lib/istio, on its file system (a mount there
# shows what its maker's file system says). Once every path passes, nobody but root and the agent can
# change any of them before istio-start.sh reads them.
#
# Runs with /bin/sh and coreutils only: it reads file metadata and /etc/passwd (for the
# agent's uid), never a file's content, nothing from the network, and no environment.
#
# usage: istio-sidecar-check.sh [--root=DIR] [-- COMMAND [ARG...]]
#   --root=DIR   examine DIR as if it were / (a scratch root, an image's mount)
#   COMMAND      run when every path is safe (istio's stop clean-up sources the same files)
# Exit 0: safe (or COMMAND's status). 1: a path is not safe; each is named on stderr with its
# type, owner, mode and the command that repairs it. 2: a usage error.
set -u
export LC_ALL=C
me=istio-sidecar-check
usage="usage: $me [--root=DIR] [-- COMMAND [ARG...]]"
root=
while [ $# -gt 0 ]; do
  case $1 in
    --root=/*) root=${1#--root=} ;;
    --) shift; break ;;
    -h | --help) echo "$usage"; exit 0 ;;
    *) echo "$me: unknown argument '$1'; $usage" >&2; exit 2 ;;
  esac
  shift
done
while [ "${root%/}" != "$root" ]; do root=${root%/}; done

agent=registrar-agent
agent_uid=$(sed -n "s/^$agent:[^:]*:\([0-9][0-9]*\):.*/\1/p" "$root/etc/passwd" 2>/dev/null | head -n 1)
repair="/opt/registrar-agent/istio-sidecar-repair.sh${root:+ --root=$root}"
reinstall="put back the file Istio's package installs, as root (apt-get install --reinstall istio-sidecar, or dnf reinstall istio-sidecar)"
bad=0
present=0
istio_device=
# Directories already examined, by verdict: a directory shared by two files is examined (and
# reported) once. Under an unsafe directory that is a directory the walk goes on, to name what
# is below too (the verdict is already no); under anything else, a link above all, it stops.
good_dirs=' '
unsafe_dirs=' '
bad_dirs=' '

# The name of a uid in the root's own /etc/passwd (under --root the host's would be wrong).
user_name() {
  name=$(sed -n "s/^\([^:]*\):[^:]*:$1:.*/\1/p" "$root/etc/passwd" 2>/dev/null | head -n 1)
  echo "${name:-an unnamed user}"
}

# A link's target as one printable line: whoever made the link chose it, and a newline in it
# would forge a line of this script's own in the journal.
link_target() {
  printf '%s' "$(readlink -- "$1")" | tr -c '[:print:]' '?'
}

# examine PATH KIND OWNERS FIX: whether PATH (under the root) is a KIND (file or dir) owned by
# one of OWNERS (root, or root+agent) and writable by no one else. 0: it is; 1: it is not (said
# on stderr with FIX); 2: it does not exist (nothing there for root to read, and only its
# directory's owner, already examined, could create it).
examine() {
  path=$1 kind=$2 owners=$3 fix=$4
  full=$root$path
  if [ ! -e "$full" ] && [ ! -L "$full" ]; then return 2; fi
  examined_type=
  if ! info=$(stat -c '%F|%u|%a|%h|%d' -- "$full" 2>&1); then
    bad=$((bad + 1))
    echo "$me: $full: cannot be examined ($info)" >&2
    return 1
  fi
  IFS='|' read -r type uid mode links device <<EOF
$info
EOF
  examined_type=$type
  [ "$path" = /var/lib/istio ] && istio_device=$device
  name=$(user_name "$uid")
  why=
  case $kind:$type in
    file:'regular file' | file:'regular empty file' | dir:directory) ;;
    *:'symbolic link')
      why="a symbolic link to '$(link_target "$full")': root would read whatever it points to" ;;
    file:*) why="a $type where root reads a regular file" ;;
    dir:*) why="a $type where a directory belongs" ;;
  esac
  if [ -z "$why" ]; then
    if [ "$uid" != 0 ] && { [ "$owners" = root ] || [ -z "$agent_uid" ] || [ "$uid" != "$agent_uid" ]; }; then
      if [ "$owners" = root ]; then who=root; else who="root or $agent"; fi
      why="owned by $name, who could change it: $who must own it"
    fi
    if [ $((0$mode & 022)) -ne 0 ]; then
      why="${why:+$why; }writable by its group or by others"
    fi
    if [ "$kind" = file ] && [ "$links" -gt 1 ]; then
      why="${why:+$why; }it has $((links - 1)) other name(s) (hard links) where others may have put it"
    fi
    # A file system mounted inside Istio's tree (a FUSE mount istio-proxy made on a directory
    # it owned) shows whatever owner and mode its maker's program answers.
    case $path in
      /var/lib/istio/*)
        if [ -n "$istio_device" ] && [ "$device" != "$istio_device" ]; then
          why="${why:+$why; }a mount point in /var/lib/istio, whose owner and mode are what the mounted file system says"
          fix="as root: umount $full; then $fix"
        fi
        ;;
    esac
  fi
  [ -z "$why" ] && return 0
  bad=$((bad + 1))
  echo "$me: $full: $type, owner $name (uid $uid), mode $(printf '%04d' "$mode"): $why; repair: $fix" >&2
  return 1
}

# The fix for a path the repair does not look after: Istio's programs and the system's own
# directories, which only root changes.
system_fix() {
  case $2 in
    file) echo "$reinstall" ;;
    *) echo "as root, make it a directory of root's: chown root:root $root$1 && chmod go-w $root$1" ;;
  esac
}

# check FILE OWNERS: FILE and every directory above it, from / down; the walk stops at the
# first one that is absent, or not a directory (what is below it is reached through it).
check() {
  file=$1 file_owners=$2
  dir=
  rest=${file#/}
  # The directories' names, one word each (the paths are this script's own, with no blank).
  set -- / $(echo "${rest%/*}" | tr '/' ' ')
  for part; do
    if [ "$part" = / ]; then dir=/; else dir=${dir%/}/$part; fi
    case $good_dirs$unsafe_dirs in *" $dir "*) continue ;; esac
    case $bad_dirs in *" $dir "*) return ;; esac
    case $dir in
      /var/lib/istio) owners=root fix=$repair ;;
      /var/lib/istio/envoy | /var/lib/istio/config) owners=root+agent fix=$repair ;;
      *) owners=root fix=$(system_fix "$dir" dir) ;;
    esac
    examine "$dir" dir "$owners" "$fix"
    case $? in
      0) good_dirs="$good_dirs$dir " ;;
      1)
        if [ "$examined_type" = directory ]; then
          unsafe_dirs="$unsafe_dirs$dir "
        else
          bad_dirs="$bad_dirs$dir " && return
        fi
        ;;
      2) return ;;
    esac
  done
  case $file in
    /var/lib/istio/*) fix=$repair ;;
    *) fix=$(system_fix "$file" file) ;;
  esac
  examine "$file" file "$file_owners" "$fix"
  [ $? -ne 2 ] && present=$((present + 1))
}

# What istio-start.sh sources as root (Istio's sidecar.env, which the agent never writes, is
# root's alone; cluster.env is the agent's or an operator's copy), the mesh config (read as
# root when sidecar.env runs the proxy as root), and the programs root runs for istio.
check /var/lib/istio/envoy/sidecar.env root
check /var/lib/istio/envoy/cluster.env root+agent
check /var/lib/istio/config/mesh root+agent
check /usr/local/bin/istio-start.sh root
check /usr/local/bin/pilot-agent root
check /usr/local/bin/envoy root

if [ "$bad" -gt 0 ]; then
  echo "$me: istio does not start: $bad path(s) above could make root run what another user wrote; repair them, then: systemctl restart istio" >&2
  [ $# -gt 0 ] && echo "$me: not running '$*': it reads the same files as root" >&2
  exit 1
fi
echo "$me: safe: $present file(s) root reads or runs for istio${root:+ under $root}, and every directory above them, are root's or $agent's, writable by no one else, with no link on the way"
[ $# -gt 0 ] && exec "$@"
exit 0
