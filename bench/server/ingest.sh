#!/usr/bin/env bash
# End-to-end ingest through a real `sparkprof serve`: UPLOADS uploads of a
# JVM's windows sent over HTTP by bench/server/send, as 100 executors would
# send them (executor i sends window i/100 in turn), then the server
# process's CPU time per upload (user+system from /proc, its background
# compaction included), its peak RSS and what it reports in /metrics about
# its store; then kills it with -9 and times its restart to /ready. CPU per
# upload includes the HTTP server's share, which the Go benchmarks leave out.
#
# usage: bench/server/ingest.sh RECORDING [UPLOADS (default 1000)] [serve flags...]
#   RECORDING: JFR chunks one after the other (gzipped or not), as the agent writes a JVM's windows
#   for outputDir (profile-driver.jfr), or any single JFR file
#   e.g. bench/server/ingest.sh profile-driver.jfr 3000 --head-mb 256
# environment:
#   WARMUP=N   send N uploads first and measure only the UPLOADS after them (default 0)
#   GAP=D      pause D (a Go duration, e.g. 100ms) after each measured upload (default 0:
#              back to back; 100 executors uploading every 10 s send one per 100 ms)
#   FRESH=1    a new connection per upload, as agents on other hosts open (default: one kept alive)
#   SERVER=BIN a sparkprof binary to measure instead of this checkout's build (side-by-side runs of two builds)
#   CONCURRENCY=N  N uploads in flight at once, as a stage's executors ending together send their last
#              windows (default 1); the peak RSS then shows what a burst costs the server's memory
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
rec=$1
uploads=${2:-1000}
shift $(($# < 2 ? $# : 2))
tmp=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT

(cd "$root" && go build -o "$tmp/sparkprof" ./cmd/sparkprof && go build -o "$tmp/send" ./bench/server/send)
[ -n "${SERVER:-}" ] && cp "$SERVER" "$tmp/sparkprof"

"$tmp/sparkprof" serve --addr "127.0.0.1:$port" --data "$tmp/data" --retention 0 "$@" >"$tmp/serve.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$port/ready" >/dev/null 2>&1 && break
	sleep 0.1
done

# cpu: the server's user+system time so far, in ms.
tck=$(getconf CLK_TCK)
cpu() { awk -v t="$tck" '{print int(($14 + $15) * 1000 / t)}' "/proc/$pid/stat"; }

# compacted: the seconds the server has spent compacting so far.
compacted() { curl -s "http://127.0.0.1:$port/metrics" | awk '/^sparkprof_store_compaction_seconds_total / {print $2}'; }

fresh=$([ "${FRESH:-0}" = 1 ] && echo true || echo false)
send() { "$tmp/send" -server "http://127.0.0.1:$port" -fresh="$fresh" -concurrency "${CONCURRENCY:-1}" "$@" "$rec"; }
warmup=${WARMUP:-0}
[ "$warmup" -gt 0 ] && send -n "$warmup"
before=$(cpu) compacted0=$(compacted)
start=$(date +%s%N)
send -first "$warmup" -n "$uploads" -gap "${GAP:-0}"
elapsed=$((($(date +%s%N) - start) / 1000000))
used=$(($(cpu) - before))
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
awk -v u="$used" -v n="$uploads" -v e="$elapsed" -v h="$hwm" -v c0="$compacted0" -v c1="$(compacted)" 'BEGIN {
	printf "uploads %d in %.1f s; server CPU %.2f ms/upload; compaction %.2f ms/upload (its wall time); peak RSS %.0f MB\n",
		n, e / 1000, u / n, (c1 - c0) * 1000 / n, h / 1024 }'
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
