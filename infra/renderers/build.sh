#!/usr/bin/env bash
# Builds the real kustomize and helm CLIs that the fetch function renders
# with, and the sops CLI the apply function decrypts with, from the pinned
# wrapper Go modules beside this script, into a cache outside the checkout:
#
#   ${DRIFTLESS_CACHE_DIR:-~/.cache/driftless}/renderers/<name>-<goos>-<goarch>-<key>/<name>
#
# <key> hashes the wrapper's go.mod, go.sum, package and ldflags
# (scripts/go-cached-build.sh): a change of pin builds anew, anything else
# reuses what is there. Static binaries (CGO_ENABLED=0), so the linux/arm64
# ones run in the Lambda layer (infra/serverless/renderers-layer.cjs).
#
# Usage: build.sh [--target GOOS/GOARCH] [kustomize] [helm] [sops]
#   default target: the host (or GOOS/GOARCH when set); default: all three.
# Prints one line per renderer: <name>=<path of its binary>.
# Progress goes to stderr; stdout carries only those lines.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../scripts/go-cached-build.sh
source "$here/../../scripts/go-cached-build.sh"
cache_root=${DRIFTLESS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/driftless}/renderers

names=()
while [ $# -gt 0 ]; do
  case $1 in
    --target)
      [ $# -ge 2 ] && [[ $2 == */* ]] || { echo "build.sh: --target takes GOOS/GOARCH, e.g. linux/arm64" >&2; exit 2; }
      export GOOS=${2%/*} GOARCH=${2#*/}
      shift 2 ;;
    kustomize | helm | sops) names+=("$1"); shift ;;
    *) echo "build.sh: unknown argument '$1' (--target GOOS/GOARCH, kustomize, helm, sops)" >&2; exit 2 ;;
  esac
done
[ ${#names[@]} -gt 0 ] || names=(kustomize helm sops)
goos=$(go env GOOS)
goarch=$(go env GOARCH)

package_of() {
  case $1 in
    kustomize) echo "sigs.k8s.io/kustomize/kustomize/v5" ;;
    helm) echo "helm.sh/helm/v4/cmd/helm" ;;
    sops) echo "github.com/getsops/sops/v3/cmd/sops" ;;
  esac
}

# kustomize reads its version from the module's build info. helm's comes
# from ldflags; without them `helm version` says v4.3 and no tree state.
ldflags_of() {
  case $1 in
    helm)
      local version
      version=$(cd "$here/helm" && go list -m -f '{{.Version}}' helm.sh/helm/v4)
      echo "-s -w -X helm.sh/helm/v4/internal/version.version=$version" \
        "-X helm.sh/helm/v4/internal/version.gitTreeState=clean" ;;
    *) echo "-s -w" ;;
  esac
}

for name in "${names[@]}"; do
  dir=$(go_cached_build "$cache_root/$name-$goos-$goarch" "$here/$name" "$(ldflags_of "$name")" "$name" "$(package_of "$name")")
  echo "$name=$dir/$name"
done
