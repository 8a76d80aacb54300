#!/bin/sh
# Run by the systemd unit as root before the agent starts (ExecStartPre=+, docs/agent.md,
# "Memory"): hands the agent's user the one file through which the agent gives its start-up
# memory back to the kernel: its own cgroup's memory.reclaim (cgroup v2) or memory.force_empty
# (cgroup v1). Nothing else in the cgroup tree becomes writable. Exits 0 when there is no such
# file (an old kernel, no memory controller): the agent then keeps its memory and says why.
#
# usage: grant-memory-reclaim.sh <user>
# Tests may point it elsewhere: CGROUP_ROOT (/sys/fs/cgroup), PROC_CGROUP (/proc/self/cgroup).
set -eu
user="$1"
root="${CGROUP_ROOT:-/sys/fs/cgroup}"
cgroups="${PROC_CGROUP:-/proc/self/cgroup}"
# This script runs in the unit's cgroup, which is the agent's.
v1=$(sed -n 's/^[0-9]*:\([^:]*,\)\{0,1\}memory\(,[^:]*\)\{0,1\}://p' "$cgroups")
if [ -n "$v1" ]; then
  path="$v1" file="$root/memory$v1/memory.force_empty"
else
  path=$(sed -n 's/^0:://p' "$cgroups") file="$root$path/memory.reclaim"
fi
if [ "$path" = / ] || [ -z "$path" ]; then
  echo "grant-memory-reclaim: the unit runs in the root cgroup; nothing granted" >&2
  exit 0
fi
if [ ! -e "$file" ]; then
  echo "grant-memory-reclaim: no $file; the agent will keep its start-up memory" >&2
  exit 0
fi
chown "$user" "$file"
