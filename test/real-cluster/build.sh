#!/usr/bin/env bash
# Builds the real control plane the real-cluster tests run against, from the modules pinned
# beside this script (one Go module per component, so that minimal version selection never
# mixes the k8s.io libraries Kubernetes 1.37 and Istio each want):
#
#   kube-apiserver/   k8s.io/kubernetes/cmd/kube-apiserver
#   etcd/             go.etcd.io/etcd/server/v3 (etcd's own main package)
#   istiod/           istio.io/istio/pilot/cmd/pilot-discovery, and Istio's CRDs from the same
#                     module (manifests/charts/base/files/crd-all.gen.yaml)
#
# The sources come from the Go module proxy into the module cache ($(go env GOMODCACHE)),
# never into this repository. The binaries go to a cache outside the clone, keyed by the pins
# (what every go.mod here requires, replaces and builds, every go.sum, the recipe below and
# `go version`), so a warm run only checks that the directory is there:
#
#   ${REGISTRAR_REAL_CLUSTER_CACHE:-$HOME/.cache/workload-registrar/real-cluster}/<key>/
#     bin/{kube-apiserver,etcd,pilot-discovery}
#     share/crd-all.gen.yaml
#     versions          one "component version" line each
#
# usage: test/real-cluster/build.sh             build what is missing, print the directory
#        test/real-cluster/build.sh --dir       print the directory only (nothing is built)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# The machine's Go (its official install lives in /usr/local/go, which a bare PATH may lack).
if ! command -v go >/dev/null && [ -x /usr/local/go/bin/go ]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
modules=(kube-apiserver etcd istiod)

# How this script builds (flags, what is copied): bump it when that changes, so that a cache
# built the old way is not taken for the new one.
recipe=1

# The pins themselves: a change to any of them (not to a comment), to the recipe or to the Go
# version is a new key.
key_input() {
  for m in "${modules[@]}"; do
    (cd "$here/$m" && go mod edit -json)
    cat "$here/$m/go.sum"
  done
  echo "recipe $recipe"
  go version
}
key="$(key_input | sha256sum | cut -c1-16)"
root="${REGISTRAR_REAL_CLUSTER_CACHE:-$HOME/.cache/workload-registrar/real-cluster}"
dir="$root/$key"

if [ "${1:-}" = "--dir" ]; then
  echo "$dir"
  exit 0
fi

if [ -f "$dir/versions" ]; then
  echo "$dir"
  exit 0
fi

mkdir -p "$root"
# Two builds at once (two worktrees, a test run and CI) wait for each other rather than both
# spending the two cores on the same work.
exec 9>"$root/.lock"
flock 9
if [ -f "$dir/versions" ]; then
  echo "$dir"
  exit 0
fi

# The version a module is pinned at in its go.mod, e.g. `pin kube-apiserver k8s.io/kubernetes`.
pin() { (cd "$here/$1" && go list -m -f '{{.Version}}' "$2"); }
k8s="$(pin kube-apiserver k8s.io/kubernetes)"
etcd="$(pin etcd go.etcd.io/etcd/server/v3)"
istio="$(pin istiod istio.io/istio)"
minor="${k8s#v1.}"
minor="${minor%%.*}"

work="$(mktemp -d "$root/.build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/share"

build() { # module, output name, package, extra ldflags
  local start=$SECONDS
  (cd "$here/$1" && go build -trimpath -buildvcs=false -ldflags "-s -w $4" -o "$work/bin/$2" "$3")
  echo "built $2 in $((SECONDS - start)) s" >&2
}

# kube-apiserver reports the version it was released as (its /version and the compatibility
# version it derives from it), as the release build's hack/lib/version.sh stamps it.
build kube-apiserver kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver \
  "-X k8s.io/component-base/version.gitVersion=$k8s -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
build etcd etcd go.etcd.io/etcd/server/v3 ""
build istiod pilot-discovery istio.io/istio/pilot/cmd/pilot-discovery \
  "-X istio.io/istio/pkg/version.buildVersion=$istio -X istio.io/istio/pkg/version.buildStatus=Clean"

crds="$(cd "$here/istiod" && go list -m -f '{{.Dir}}' istio.io/istio)/manifests/charts/base/files/crd-all.gen.yaml"
cp "$crds" "$work/share/crd-all.gen.yaml"
chmod 0644 "$work/share/crd-all.gen.yaml"

{
  echo "kube-apiserver $k8s"
  echo "etcd $etcd"
  echo "istio $istio"
  echo "go $(go env GOVERSION)"
} >"$work/versions"

rm -rf "$dir"
mv "$work" "$dir"
trap - EXIT
echo "$dir"
