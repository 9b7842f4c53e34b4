#!/usr/bin/env bash
# `sparkprof import` of one large event log into a real `sparkprof serve`:
# makes a log of about 290 MB from the corpus's largest (the nvidia
# tasks_executors_fail log, 36.5 MB decompressed: its events after the
# first line, eight times over), imports it, and prints the client's wall
# time and peak RSS, the server's peak RSS (VmHWM) and whether the app
# arrived. Give a second binary to run the same import with it first, side
# by side (e.g. one built from an earlier commit).
#
# usage: bench/server/import-eventlog.sh [BASELINE_BINARY]
# needs: zstd (apt-get install zstd)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
testdata=${TESTDATA:-$root/../shared/testdata}
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT

(cd "$root" && go build -o "$tmp/sparkprof" ./cmd/sparkprof)
zstd -dc "$testdata/eventlogs/nvidia/tasks_executors_fail_compressed_eventlog.zstd" >"$tmp/one.log"
{
	head -n 1 "$tmp/one.log"
	for _ in 1 2 3 4 5 6 7 8; do tail -n +2 "$tmp/one.log" | grep -v SparkListenerApplicationEnd; done
	grep SparkListenerApplicationEnd "$tmp/one.log"
} >"$tmp/big.log"
echo "event log: $(stat -c %s "$tmp/big.log") bytes"

run() {
	local bin=$1 port=$((20000 + RANDOM % 20000))
	"$bin" serve --addr 127.0.0.1:$port --data "$tmp/data-$port" >"$tmp/serve-$port.log" 2>&1 &
	pid=$!
	for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/ready" >/dev/null && break; sleep 0.1; done
	echo "== $bin"
	/usr/bin/time -f "client: %e s wall, peak RSS %M KB" "$bin" import --server "http://127.0.0.1:$port" "$tmp/big.log" 2>&1 |
		grep -E '^(client|imported|sparkprof import)' || true
	echo "server: peak RSS $(awk '/VmHWM/ {print $2, $3}' /proc/$pid/status)"
	echo "apps: $(curl -s "http://127.0.0.1:$port/api/v1/apps" | grep -o '"id":"[^"]*"' | tr '\n' ' ')"
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	pid=
}
[ $# -ge 1 ] && run "$1"
run "$tmp/sparkprof"
