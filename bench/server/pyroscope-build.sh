#!/usr/bin/env bash
# Builds a Pyroscope server from a source checkout, for bench/server/load.sh
# (PYROSCOPE=BIN) to measure beside sparkprof. Pyroscope (AGPL) is not
# served by the Go module proxy, so its source comes from a checkout of
# github.com/grafana/pyroscope; the proxy refuses the pseudo-version of
# github.com/grafana/dskit some of its versions pin too, which DSKIT, a
# checkout of that commit, then replaces. Nothing of either is kept here
# but the binary.
#
# usage: bench/server/pyroscope-build.sh PYROSCOPE_SRC [DSKIT_SRC] [OUT (default build/pyroscope/pyroscope)]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 1 ] || { echo "usage: bench/server/pyroscope-build.sh PYROSCOPE_SRC [DSKIT_SRC] [OUT]" >&2; exit 2; }
src=$(cd "$1" && pwd)
dskit=${2:+$(cd "$2" && pwd)}
out=${3:-$root/build/pyroscope/pyroscope}
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The replace goes into a copy of its go.mod (go build -modfile), so that
# the checkout is not touched.
cp "$src/go.mod" "$tmp/go.mod"
cp "$src/go.sum" "$tmp/go.sum"
if [ -n "$dskit" ]; then
	go mod edit -replace "github.com/grafana/dskit=$dskit" "$tmp/go.mod"
fi
cd "$src"
GOTOOLCHAIN=local GOFLAGS=-mod=mod go build -modfile "$tmp/go.mod" -o "$out" ./cmd/pyroscope
echo "built $out from $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo "$src")"
