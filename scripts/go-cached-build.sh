# Sourced by the scripts that build real binaries from pinned wrapper Go
# modules (test/testbin/build.sh, infra/renderers/build.sh): one recipe for
# the static build and its content-hash cache outside the checkout.

# go_cached_build PREFIX MODULE_DIR LDFLAGS BINARIES PACKAGES [TAGS [CGO]]
#
# Builds PACKAGES (space-separated import paths, tools of the wrapper module
# in MODULE_DIR) into the directory PREFIX-<key>, unless every one of
# BINARIES (space-separated file names) is already there, and prints that
# directory on stdout. <key> hashes the module's go.mod and go.sum, PACKAGES
# and LDFLAGS: a change of pin or recipe builds anew, anything else reuses
# what is there. The target platform is go's own: GOOS/GOARCH in the
# environment, else the host; PREFIX should name it when it can differ.
#
# go names each binary after its package; a single package is built straight
# into the single name in BINARIES instead.
#
# TAGS (space-separated build tags) and CGO (1 to link C code, e.g. SQLite
# through go-sqlite3; default 0, static binaries) join the key only when
# given, so the keys of builds without them stay as they were.
go_cached_build() {
  local prefix=$1 module=$2 ldflags=$3 binaries=$4 packages=$5 tags=${6:-} cgo=${7:-0}
  local key dir
  key=$({
    cat "$module/go.mod" "$module/go.sum"
    echo "$packages"
    echo "$ldflags"
    if [ -n "$tags" ] || [ "$cgo" != 0 ]; then echo "tags:$tags cgo:$cgo"; fi
  } | sha256sum | cut -c1-16)
  dir="$prefix-$key"
  local bin missing=0
  for bin in $binaries; do
    [ -x "$dir/$bin" ] || missing=1
  done
  if [ "$missing" = 1 ]; then
    echo "go-cached-build: building $(basename "$prefix") into $dir (once per pin; minutes on 2 cores)" >&2
    local parent staging output start=$SECONDS
    parent=$(dirname "$prefix")
    mkdir -p "$parent"
    staging=$(mktemp -d "$parent/.staging-$(basename "$prefix")-XXXXXX")
    output="$staging/"
    # shellcheck disable=SC2086
    if [ "$(echo $packages | wc -w)" = 1 ]; then output="$staging/$binaries"; fi
    # shellcheck disable=SC2086
    (cd "$module" && CGO_ENABLED=$cgo GOFLAGS=-mod=readonly \
      go build -trimpath -tags "$tags" -ldflags "$ldflags" -o "$output" $packages) || {
      rm -rf "$staging"
      return 1
    }
    # Publish the directory whole, so a concurrent or interrupted build never
    # leaves a half-built set behind.
    rm -rf "$dir"
    mv "$staging" "$dir"
    echo "go-cached-build: built $(basename "$prefix") in $((SECONDS - start)) s" >&2
  fi
  echo "$dir"
}
