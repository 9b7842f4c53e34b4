#!/usr/bin/env bash
# Instructions per op of a Go benchmark, counted by valgrind (Debian's
# valgrind package): a figure that does not drift with the machine's speed,
# where this VM's timings drift by ±20 % within minutes. GOMAXPROCS=1 and
# GOGC=off make the count repeat to within a few hundred instructions per op;
# so it counts the work of the code under test, not garbage collection, page
# faults or waiting. Per op is (I(2N) - I(N)) / N: set-up cancels out.
#
# usage: bench/icount.sh PKG BENCH [N] [BASE]
#   bench/icount.sh ./format/jfr DecodeCortex 10          # the working tree
#   bench/icount.sh ./server Ingest/plain 10 HEAD~2       # and HEAD~2, side by side
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pkg=$1 bench=$2 n=${3:-10} base=${4:-}
tmp=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$tmp/base" 2>/dev/null || true; rm -rf "$tmp"' EXIT
export SPARKPROF_TESTDATA=${SPARKPROF_TESTDATA:-$(cd "$root/../shared/testdata" && pwd)}

(cd "$root" && go test -c -o "$tmp/new.test" "$pkg")
bins=(new)
if [ -n "$base" ]; then
	git -C "$root" worktree add -q --detach "$tmp/base" "$base"
	(cd "$tmp/base" && go test -c -o "$tmp/base.test" "$pkg")
	bins=(base new)
fi

# count N: the instructions of a run of N ops (plus set-up).
count() {
	GOMAXPROCS=1 GOGC=off valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
		"$tmp/$bin.test" -test.run '^$' -test.bench "$bench" -test.benchtime "${1}x" 2>&1 |
		awk '/I *refs/ {gsub(",", "", $NF); print $NF}'
}
cd "$root/$pkg"
declare -A per
for bin in "${bins[@]}"; do
	a=$(count "$n")
	b=$(count $((2 * n)))
	per[$bin]=$(((b - a) / n))
	printf '%-5s %s: %d instructions/op\n' "$bin" "$bench" "${per[$bin]}"
done
if [ -n "$base" ]; then
	echo "new / base: $(echo "scale=3; ${per[new]} / ${per[base]}" | bc)"
fi
