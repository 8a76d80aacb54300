#!/usr/bin/env bash
# The real-cluster stage: builds the real control plane from the pinned modules (cached:
# build.sh), then runs the tests that need it (test/integration/real-cluster-*.test.ts) one
# file at a time, printing the versions and how long each part took. .ci/run calls it after
# `npm test`, with CI=true: there a missing binary or a failing test fails the run.
#
# usage: test/real-cluster/stage.sh [vitest options...]
# Needs Go on PATH (and, like `npm test`, Node 22 and `npm ci`).
set -euo pipefail
cd "$(dirname "$0")/../.."

# The machine's Go (its official install lives in /usr/local/go, which a bare PATH may lack;
# build.sh looks there too).
if ! command -v go >/dev/null && [ -x /usr/local/go/bin/go ]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
command -v go >/dev/null || { echo 'real-cluster stage: no go on PATH; it builds kube-apiserver, etcd and istiod from test/real-cluster/' >&2; exit 1; }
echo "real-cluster stage: $(go version)"

start=$SECONDS
dir="$(bash test/real-cluster/build.sh)"
echo "real-cluster stage: built (or found) in $((SECONDS - start)) s: $dir"
sed 's/^/real-cluster stage:   /' "$dir/versions"

start=$SECONDS
# One file at a time: each starts its own etcd, kube-apiserver and istiods, and two of them
# at once would share two cores with each other besides the rest of the machine.
REGISTRAR_REAL_CLUSTER_STAGE=1 node node_modules/vitest/vitest.mjs run \
  --no-file-parallelism test/integration/real-cluster- "$@"
echo "real-cluster stage: tests ran in $((SECONDS - start)) s"
