#!/usr/bin/env bash
# Installs the pinned Python tools of requirements.txt (beside this script) into
# a virtual environment outside the checkout, once per version of that file:
#
#   ${DRIFTLESS_CACHE_DIR:-~/.cache/driftless}/python/<hash of requirements.txt>/
#
# Prints `python=<venv directory>`; progress goes to stderr. A venv cannot be
# moved once made, so it is built in place and marked complete last: an
# interrupted install is removed and redone by the next run.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache_root=${DRIFTLESS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/driftless}/python
key=$(sha256sum "$here/requirements.txt" | cut -c1-16)
dir="$cache_root/$key"

if [ ! -f "$dir/.complete" ]; then
  echo "python-tools: installing $here/requirements.txt into $dir" >&2
  start=$SECONDS
  rm -rf "$dir"
  mkdir -p "$cache_root"
  python3 -m venv "$dir" >&2
  "$dir/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt" >&2
  touch "$dir/.complete"
  echo "python-tools: installed in $((SECONDS - start)) s" >&2
fi
echo "python=$dir"
