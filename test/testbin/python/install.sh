#!/usr/bin/env bash
# Installs the pinned Python tools of requirements.txt (beside this script), or of
# the requirements file given as the first argument, into a virtual environment
# outside the checkout, once per version of that file:
#
#   ${DRIFTLESS_CACHE_DIR:-~/.cache/driftless}/python/<hash of the requirements file>/
#
# (template-checks.txt: cfn-lint and checkov get a venv of their own: checkov pins
# boto3==1.35.49, which would hold moto's botocore at 1.35 where it gets 1.44 alone.)
#
# Prints `python=<venv directory>`; progress goes to stderr. A venv cannot be
# moved once made, so it is built in place and marked complete last: an
# interrupted install is removed and redone by the next run.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache_root=${DRIFTLESS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/driftless}/python
requirements=${1:-$here/requirements.txt}
key=$(sha256sum "$requirements" | cut -c1-16)
dir="$cache_root/$key"

if [ ! -f "$dir/.complete" ]; then
  echo "python-tools: installing $requirements into $dir" >&2
  start=$SECONDS
  rm -rf "$dir"
  mkdir -p "$cache_root"
  python3 -m venv "$dir" >&2
  "$dir/bin/pip" install --quiet --disable-pip-version-check -r "$requirements" >&2
  touch "$dir/.complete"
  echo "python-tools: installed in $((SECONDS - start)) s" >&2
fi
echo "python=$dir"
