#!/usr/bin/env bash
# A fleet's load on a real `sparkprof serve` on loopback: AGENTS agents each
# upload RECORDING (its chunks dated to the window just ended) every 10 s
# for DURATION, while a render of the last five minutes runs every second
# (bench/server/load). Then: errors, ingest and render latencies, the
# server's peak RSS, its CPU, and whether every acknowledged upload is
# stored — before and after a kill -9 and restart.
#
# usage: bench/server/load.sh [RECORDING] [serve flags...]
#   RECORDING: a JFR file (default: the corpus's cortex recording, 685 KB)
#   e.g. bench/server/load.sh ../shared/testdata/jfr/cortex-dev-01__kafka-0__cpu_lock0_alloc0__0.jfr.gz --memory-limit 900MiB
# environment: AGENTS (200), DURATION (5m), INTERVAL (10s), RENDER (1s between renders, 0 for none), SERVER=BIN (a build to measure instead of this checkout's),
#   LABELS=FILE (a LabelsSnapshot sent beside each JFR as the Pyroscope Java agent's multipart: bench/contexts makes
#   both), WARMUP (1m: the server's CPU per upload is also counted from then on, its compaction under way),
#   PYROSCOPE=BIN (a Pyroscope server built from source, bench/server/pyroscope-build.sh, to measure instead: one
#   binary on its v1 storage, the limits that would refuse the load lifted; serve flags then go to it)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
rec=${1:-${SPARKPROF_TESTDATA:-$root/../shared/testdata}/jfr/cortex-dev-01__kafka-0__cpu_lock0_alloc0__0.jfr.gz}
shift $(($# < 1 ? $# : 1))
tmp=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT

(cd "$root" && go build -o "$tmp/sparkprof" ./cmd/sparkprof && go build -o "$tmp/load" ./bench/server/load)
[ -n "${SERVER:-}" ] && cp "$SERVER" "$tmp/sparkprof"

serve() {
	if [ -n "${PYROSCOPE:-}" ]; then
		# A single binary keeping its data under ./data of its working
		# directory, with its gRPC and gossip ports beside the HTTP one. Its
		# v1 storage, the ingesters' (its default, v1 and v2 side by side,
		# answered no query in a single node here). The limits that refuse
		# by rate, size or series are lifted: at its defaults (4 MB/s,
		# 16,000 samples a profile, 5,000 series) it refuses the recording,
		# and a fleet of more than about 550 executors.
		mkdir -p "$tmp/data"
		(cd "$tmp/data" && exec "$PYROSCOPE" -architecture.storage=v1 -write-path=ingester \
			-server.http-listen-port="$port" -server.grpc-listen-port=$((port + 1)) -memberlist.bind-port=$((port + 2)) \
			-self-profiling.disable-push=true -usage-stats.enabled=false \
			-distributor.ingestion-rate-limit-mb=100000 -distributor.ingestion-burst-size-mb=100000 \
			-validation.max-profile-stacktrace-samples=0 -validation.max-profile-size-bytes=0 \
			-ingester.max-global-series-per-tenant=0 "$@" >>"$tmp/serve.log" 2>&1) &
	else
		"$tmp/sparkprof" serve --addr "127.0.0.1:$port" --data "$tmp/data" "$@" >>"$tmp/serve.log" 2>&1 &
	fi
	pid=$!
	until curl -sf "http://127.0.0.1:$port/ready" >/dev/null 2>&1; do
		kill -0 "$pid" 2>/dev/null || { tail "$tmp/serve.log" >&2; exit 1; }
		sleep 0.1
	done
}
# stored: the uploads the store holds (its head and its blocks).
stored() {
	curl -s "http://127.0.0.1:$port/metrics" | awk '/^sparkprof_store_(head_uploads|block_uploads) / {n += $2} END {print n}'
}
tck=$(getconf CLK_TCK)
cpu() { awk -v t="$tck" '{print ($14 + $15) / t}' "/proc/$pid/stat"; }

serve "$@"
cpu0=$(cpu)
"$tmp/load" -server "http://127.0.0.1:$port" -pid "$pid" -warmup "${WARMUP:-1m}" ${LABELS:+-labels "$LABELS"} -agents "${AGENTS:-200}" -duration "${DURATION:-5m}" -interval "${INTERVAL:-10s}" -render "${RENDER:-1s}" "$rec" | tee "$tmp/load.out" || true
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
acked=$(awk -F= '/^acknowledged=/ {print $2}' "$tmp/load.out")
echo "server: peak RSS $((hwm / 1024)) MB, CPU $(awk -v a="$cpu0" -v b="$(cpu)" -v n="$acked" 'BEGIN {printf "%.1f s, %.1f ms per upload", b - a, (b - a) * 1000 / n}')"
if [ -n "${PYROSCOPE:-}" ]; then
	exit 0 # what it stored is not counted the same way
fi
echo "stored $(stored) of $acked acknowledged"
curl -s "http://127.0.0.1:$port/metrics" | grep -E '^sparkprof_(store_head_bytes|store_compactions_total|ingest_memory_bytes|samples_clamped_total|upload_errors_total)' || true

kill -9 "$pid"
wait "$pid" 2>/dev/null || true
serve "$@"
echo "after kill -9 and a restart: stored $(stored) of $acked acknowledged"
