#!/usr/bin/env bash
# End-to-end ingest through a real `sparkprof serve`: UPLOADS uploads of a
# JVM's windows sent over HTTP with curl, as 100 executors would send them
# (executor i sends window i/100 in turn), then the server process's CPU time
# per upload (user+system from /proc, its background compaction included),
# its peak RSS and what it reports in /metrics about its store; then kills
# it with -9 and times its restart to /ready. CPU per upload includes the
# HTTP server's share, which the Go benchmarks leave out.
#
# usage: bench/server/ingest.sh RECORDING [UPLOADS (default 1000)] [serve flags...]
#   RECORDING: JFR chunks one after the other, as the agent writes a JVM's windows
#   for outputDir (profile-driver.jfr), or any single JFR file
#   e.g. bench/server/ingest.sh profile-driver.jfr 3000 --head-mb 256
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
rec=$1
uploads=${2:-1000}
shift $(($# < 2 ? $# : 2))
tmp=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT

(cd "$root" && go build -o "$tmp/sparkprof" ./cmd/sparkprof)

# Split the recording into its chunks: a chunk's size is the big-endian
# 64-bit integer at its offset 8.
total=$(stat -c %s "$rec")
off=0 n=0
while [ "$off" -lt "$total" ]; do
	size=$(od -An -t u1 -j $((off + 8)) -N 8 "$rec" | awk '{s = 0; for (i = 1; i <= NF; i++) s = s * 256 + $i; print s}')
	if [ "$size" -lt 68 ] || [ $((off + size)) -gt "$total" ]; then
		echo "$rec: no JFR chunk at offset $off" >&2
		exit 1
	fi
	dd if="$rec" of="$tmp/w$n.jfr" bs=64K iflag=skip_bytes,count_bytes skip="$off" count="$size" status=none
	off=$((off + size)) n=$((n + 1))
done
echo "$rec: $n windows"

"$tmp/sparkprof" serve --addr "127.0.0.1:$port" --data "$tmp/data" --retention 0 "$@" >"$tmp/serve.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$port/ready" >/dev/null 2>&1 && break
	sleep 0.1
done

# cpu: the server's user+system time so far, in ms.
tck=$(getconf CLK_TCK)
cpu() { awk -v t="$tck" '{print int(($14 + $15) * 1000 / t)}' "/proc/$pid/stat"; }

before=$(cpu)
start=$(date +%s%N)
for i in $(seq 0 $((uploads - 1))); do
	w=$(((i / 100) % n))
	code=$(curl -s -o /dev/null -w '%{http_code}' --data-binary "@$tmp/w$w.jfr" \
		"http://127.0.0.1:$port/ingest?name=bench.cpu%7Bspark_app_id%3Dapp-1%2Cspark_executor_id%3D$((i % 100))%7D&format=jfr")
	if [ "$code" != 200 ]; then
		echo "upload $i: HTTP $code" >&2
		exit 1
	fi
done
elapsed=$((($(date +%s%N) - start) / 1000000))
used=$(($(cpu) - before))
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
awk -v u="$used" -v n="$uploads" -v e="$elapsed" -v h="$hwm" 'BEGIN {
	printf "uploads %d in %.1f s; server CPU %.2f ms/upload; peak RSS %.0f MB\n", n, e / 1000, u / n, h / 1024 }'
curl -s "http://127.0.0.1:$port/metrics" | grep -E '^sparkprof_store_(head_uploads|head_bytes|blocks|compactions_total|compaction_seconds_total) '

# Then a crash: kill -9, start again on the same data, and time until
# /ready (the write-ahead log of the head replayed).
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
start=$(date +%s%N)
"$tmp/sparkprof" serve --addr "127.0.0.1:$port" --data "$tmp/data" --retention 0 "$@" >>"$tmp/serve.log" 2>&1 &
pid=$!
until curl -sf "http://127.0.0.1:$port/ready" >/dev/null 2>&1; do
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "the server did not restart:" >&2
		tail "$tmp/serve.log" >&2
		exit 1
	fi
	sleep 0.02
done
echo "after kill -9: ready in $((($(date +%s%N) - start) / 1000000)) ms"
