#!/usr/bin/env bash
# Installs the pinned Python profilers and senders of
# tools/python/requirements.txt (py-spy, pyroscope-io) from PyPI into the
# virtual environment build/pytools, for the tests that import their
# output or take their uploads. An environment that already has the
# pinned versions is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build/pytools
req=tools/python/requirements.txt
if [ -x "$dir/bin/python" ] && cmp -s "$req" "$dir/requirements.txt"; then
	echo "python-tools-install: $(grep -v '^#' "$req" | tr '\n' ' ')are installed in $dir"
	exit 0
fi
echo "python-tools-install: installing $(grep -v '^#' "$req" | tr '\n' ' ')into $dir"
rm -rf "$dir"
python3 -m venv "$dir"
"$dir/bin/pip" install --quiet --disable-pip-version-check -r "$req"
cp "$req" "$dir/requirements.txt"
