#!/usr/bin/env bash
# Builds the real components the tests run against, from the pinned wrapper
# Go modules beside this script, into a cache outside the checkout:
#
#   ${DRIFTLESS_CACHE_DIR:-~/.cache/driftless}/testbin/<component>-<key>/
#
# <key> hashes the component's go.mod, go.sum, packages and ldflags, so a change
# of pin builds anew and CI on the same machine reuses what is there
# (scripts/go-cached-build.sh; kubernetes takes ~6 min on 2 cores).
#
# Usage: build.sh [kubernetes] [etcd] [minio] [registry] [age] [gitea]   (default: all six)
# Prints one line per component: <component>=<directory with its binaries>.
# Progress goes to stderr; stdout carries only those lines.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../scripts/go-cached-build.sh
source "$here/../../scripts/go-cached-build.sh"
cache_root=${DRIFTLESS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/driftless}/testbin

# The Kubernetes version the wrapper pins; the ldflags make the servers report
# it (without them they say v0.0.0-master+$Format...).
k8s_version=$(cd "$here/kubernetes" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
case $k8s_version in
  v1.*) ;;
  *) echo "build.sh: cannot read the pinned k8s.io/kubernetes version from kubernetes/go.mod (got '$k8s_version')" >&2; exit 1 ;;
esac
k8s_minor=$(echo "$k8s_version" | cut -d. -f2)

binaries_of() {
  case $1 in
    kubernetes) echo "kube-apiserver kube-controller-manager kubectl" ;;
    etcd) echo "etcd" ;;
    minio) echo "minio" ;;
    registry) echo "registry" ;;
    age) echo "age-keygen" ;;
    gitea) echo "gitea" ;;
    *) echo "build.sh: unknown component '$1' (kubernetes, etcd, minio, registry, age or gitea)" >&2; exit 2 ;;
  esac
}

packages_of() {
  case $1 in
    kubernetes) echo "k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl" ;;
    etcd) echo "go.etcd.io/etcd/server/v3" ;;
    minio) echo "github.com/minio/minio" ;;
    registry) echo "github.com/distribution/distribution/v3/cmd/registry" ;;
    age) echo "filippo.io/age/cmd/age-keygen" ;;
    gitea) echo "code.gitea.io/gitea" ;;
  esac
}

# Gitea keeps its data in SQLite (go-sqlite3, C code: cgo); the others are static Go.
tags_of() {
  case $1 in
    gitea) echo "sqlite sqlite_unlock_notify" ;;
    *) echo "" ;;
  esac
}

cgo_of() {
  case $1 in
    gitea) echo 1 ;;
    *) echo 0 ;;
  esac
}

ldflags_of() {
  case $1 in
    kubernetes)
      echo "-s -w -X k8s.io/component-base/version.gitVersion=$k8s_version" \
        "-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$k8s_minor" \
        "-X k8s.io/component-base/version.gitTreeState=clean" ;;
    *) echo "-s -w" ;;
  esac
}

build() {
  local dir
  dir=$(go_cached_build "$cache_root/$1" "$here/$1" "$(ldflags_of "$1")" "$(binaries_of "$1")" \
    "$(packages_of "$1")" "$(tags_of "$1")" "$(cgo_of "$1")")
  if [ "$1" = gitea ] && [ ! -d "$dir/options/locale" ]; then
    # Built without Gitea's generated bindata, it reads its locales and templates from
    # STATIC_ROOT_PATH at run time: the module's own, copied beside the binary.
    local source
    source=$(cd "$here/gitea" && go list -m -f '{{.Dir}}' code.gitea.io/gitea)
    cp -r "$source/options" "$source/templates" "$dir/"
    chmod -R u+w "$dir/options" "$dir/templates"
  fi
  echo "$1=$dir"
}

components=("$@")
[ ${#components[@]} -gt 0 ] || components=(kubernetes etcd minio registry age gitea)
for component in "${components[@]}"; do
  binaries_of "$component" >/dev/null
  build "$component"
done
