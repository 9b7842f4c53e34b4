#!/usr/bin/env bash
# Analysis throughput on a generated multi-GB event log, side by side with
# the limits on the same bytes: reading it (cat), zstd decompression, and a
# bare decode of the needed fields with encoding/json and valyala/fastjson.
#
# usage: [RUNS=5] bench/eventlog/run.sh [SIZE (default 1G)] [SOURCE event log]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
size=${1:-1G}
src=${2:-$root/../shared/testdata/eventlogs/nvidia/tasks_executors_fail_compressed_eventlog.zstd}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root"
go build -o "$tmp/tool" ./bench/eventlog/tool
go build -o "$tmp/sparkprof" ./cmd/sparkprof
"$tmp/tool" gen -size "$size" -o "$tmp/app.log" "$src"
zstd -q -3 -T0 "$tmp/app.log" -o "$tmp/app.log.zstd"
bytes=$(stat -c %s "$tmp/app.log")
echo "event log: $((bytes >> 20)) MiB plain, $(($(stat -c %s "$tmp/app.log.zstd") >> 20)) MiB zstd, from $(basename "$src")"

# timed LABEL CMD...: runs CMD $runs times and prints the fastest and the
# median wall seconds, and MB/s of the uncompressed bytes at each (this
# machine's speed varies from run to run, so one run says little).
runs=${RUNS:-5}
timed() {
	local label=$1 start end all=() n=${TIMES:-$runs}
	shift
	for _ in $(seq "$n"); do
		start=$(date +%s.%N)
		"$@" >/dev/null
		end=$(date +%s.%N)
		all+=("$(echo "$end - $start" | bc -l)")
	done
	local sorted best med
	sorted=$(printf '%s\n' "${all[@]}" | sort -g)
	best=$(echo "$sorted" | head -1)
	med=$(echo "$sorted" | sed -n "$(((n + 1) / 2))p")
	printf '%-34s best %6.2f s %6.0f MB/s   median %6.2f s %6.0f MB/s\n' "$label" \
		"$best" "$(echo "$bytes / 1000000 / $best" | bc -l)" "$med" "$(echo "$bytes / 1000000 / $med" | bc -l)"
}
cat "$tmp/app.log" >/dev/null # warm the page cache
timed "cat (read)" cat "$tmp/app.log"
timed "zstd -d (decompress)" zstd -q -d -c "$tmp/app.log.zstd"
TIMES=1 timed "encoding/json (needed fields)" "$tmp/tool" decode -mode json "$tmp/app.log"
timed "fastjson (needed fields)" "$tmp/tool" decode -mode fastjson "$tmp/app.log"
timed "sparkprof analyze --json (plain)" "$tmp/sparkprof" analyze --json "$tmp/app.log"
timed "sparkprof analyze --json (zstd)" "$tmp/sparkprof" analyze --json "$tmp/app.log.zstd"
/usr/bin/time -f "analyze peak RSS: %M KiB" "$tmp/sparkprof" analyze --json "$tmp/app.log" >/dev/null
