#!/usr/bin/env bash
# Two builds side by side on this machine, alternating, so that both see
# the machine's drift: the server's CPU per upload (BenchmarkIngest: a
# plain 685 KB JFR, and a labelled multipart one), flame-graph and page
# query latency over a tenth of the hour (BenchmarkQuery), and analyze's
# throughput on a generated event log.
#
# usage: [ROUNDS=3] [SIZE=512M] bench/builds/compare.sh OLD_REV [NEW_REV]
#
# NEW_REV defaults to the work tree as it is. Each revision is checked out
# in a temporary worktree; the corpus is ../shared/testdata (or
# $SPARKPROF_TESTDATA).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
old=${1:?usage: bench/builds/compare.sh OLD_REV [NEW_REV]}
new=${2:-}
rounds=${ROUNDS:-3}
size=${SIZE:-512M}
export SPARKPROF_TESTDATA=${SPARKPROF_TESTDATA:-$(cd "$root/../shared/testdata" && pwd)}
tmp=$(mktemp -d)
cleanup() {
	git -C "$root" worktree remove --force "$tmp/old" 2>/dev/null || true
	[ -z "$new" ] || git -C "$root" worktree remove --force "$tmp/new" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

echo "compare: checking out and building $old and ${new:-the work tree}" >&2
git -C "$root" worktree add -q --detach "$tmp/old" "$old"
newtree=$root
if [ -n "$new" ]; then
	git -C "$root" worktree add -q --detach "$tmp/new" "$new"
	newtree=$tmp/new
fi
for b in old new; do
	tree=$tmp/old
	[ "$b" = old ] || tree=$newtree
	(cd "$tree" && go test -c -o "$tmp/$b-server.test" ./server && go build -o "$tmp/$b-sparkprof" ./cmd/sparkprof)
done
(cd "$root" && go build -o "$tmp/tool" ./bench/eventlog/tool)
"$tmp/tool" gen -size "$size" -o "$tmp/app.log" "$SPARKPROF_TESTDATA/eventlogs/nvidia/tasks_executors_fail_compressed_eventlog.zstd" >/dev/null
cat "$tmp/app.log" >/dev/null # warm the page cache
echo "event log: $(($(stat -c %s "$tmp/app.log") >> 20)) MiB; $rounds rounds, old then new in each" >&2

# bench BUILD WINDOWS ARGS...: runs BUILD's server test binary from its
# package directory, with SPARKPROF_BENCH_WINDOWS=WINDOWS, and prints its
# benchmark lines.
bench() {
	local b=$1 windows=$2 tree=$tmp/old
	shift 2
	[ "$b" = old ] || tree=$newtree
	(cd "$tree/server" && SPARKPROF_BENCH_WINDOWS=$windows "$tmp/$b-server.test" -test.run '^$' "$@" 2>/dev/null) | grep '^Benchmark' | sed "s/^/$b  /"
}
for r in $(seq "$rounds"); do
	echo "== round $r"
	for b in old new; do
		bench "$b" 36 -test.bench 'Ingest/(plain|labelled)-jfr$' -test.benchtime 150x
	done
	for b in old new; do
		bench "$b" 36 -test.bench 'Query/(whole-app|one-stage|last-quarter|one-stage-joined|app-page|one-thread|apps)/' -test.benchtime 20x
	done
	for b in old new; do
		/usr/bin/time -f "$b  analyze --json: %e s, %M KiB peak" "$tmp/$b-sparkprof" analyze --json "$tmp/app.log" >/dev/null
	done
done
