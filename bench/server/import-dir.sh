#!/usr/bin/env bash
# `sparkprof import` of a directory laid out as Spark's profiler plugin
# writes one (<appId>/profile-exec-<id>.jfr), N executors' recordings (the
# corpus's dump1, an async-profiler recording of 330 KB, under each name),
# into a fresh `sparkprof serve` each time, with --parallel 1 and with
# --parallel P in turn, ROUNDS times: prints each import's wall time. Then
# imports the directory once more into the last server, which stores
# nothing new (the upload keys), and prints that time too.
#
# usage: N=100 P=4 ROUNDS=3 bench/server/import-dir.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
testdata=${TESTDATA:-$root/../shared/testdata}
n=${N:-100} p=${P:-4} rounds=${ROUNDS:-3}
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT

(cd "$root" && go build -o "$tmp/sparkprof" ./cmd/sparkprof)
dir="$tmp/profiles/app-20240101000000-0001"
mkdir -p "$dir"
gzip -dc "$testdata/jfr/dump1.jfr.gz" >"$tmp/one.jfr"
for i in $(seq "$n"); do cp "$tmp/one.jfr" "$dir/profile-exec-$i.jfr"; done
echo "$n recordings, $(du -sh "$tmp/profiles" | cut -f1)"

start() {
	port=$((20000 + RANDOM % 20000))
	"$tmp/sparkprof" serve --addr 127.0.0.1:$port --data "$tmp/data-$port" >"$tmp/serve-$port.log" 2>&1 &
	pid=$!
	for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/ready" >/dev/null && break; sleep 0.1; done
}
stop() {
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	pid=
}
import() {
	local s=$(date +%s.%N)
	"$tmp/sparkprof" import --parallel "$1" --server "http://127.0.0.1:$port" "$tmp/profiles" 2>"$tmp/import.log"
	printf '%s --parallel %s: %.2f s (%s)\n' "$2" "$1" "$(echo "$(date +%s.%N) - $s" | bc)" "$(grep -h 'imported\|already' "$tmp/import.log" | tr '\n' ' ')"
}
for r in $(seq "$rounds"); do
	for par in 1 "$p"; do
		start
		import "$par" "round $r"
		stop
	done
done
start
import "$p" "first"
import "$p" "again"
stop
