#!/usr/bin/env bash
# Scale-out on one machine: a real SeaweedFS (build/tools/weed, `make weed`)
# and 1, 2 and 3 `sparkprof serve` nodes on one bucket; bench/server/send
# spreads UPLOADS uploads of RECORDING over the nodes, CONCURRENCY at once, as
# a load balancer would. For each count of nodes: uploads acknowledged per
# second, the nodes' CPU per upload (user+system from /proc, their flushes to
# the bucket included), the flushes and bucket errors they count, how long
# until their flushes had shipped every upload to the bucket (their
# "flushed head segment" log lines), the machine's CPU count and its load
# average at the end.
#
# usage: bench/scaleout/run.sh [RECORDING]
#   RECORDING: JFR chunks (gzipped or not); default the corpus's cortex recording (685 KB, 25k samples)
# environment: UPLOADS (300), WARMUP (30), CONCURRENCY (8), NODES ("1 2 3"), FLUSH (--flush-interval, 10s),
#   ROLE (the nodes' --role, default ingest: compaction is a compactor's work, not run here),
#   WEED (the weed binary, default build/tools/weed), SERVER=BIN (a sparkprof build instead of this checkout's)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
rec=${1:-${SPARKPROF_TESTDATA:-$root/../shared/testdata}/jfr/cortex-dev-01__kafka-0__cpu_lock0_alloc0__0.jfr.gz}
weed=${WEED:-$root/build/tools/weed}
[ -x "$weed" ] || { echo "scaleout: $weed is missing: run make weed" >&2; exit 1; }
uploads=${UPLOADS:-300} warmup=${WARMUP:-30} conc=${CONCURRENCY:-8}
tmp=$(mktemp -d)
weedpid= nodepids=()
cleanup() {
	for p in "${nodepids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	[ -n "$weedpid" ] && kill -9 -- "-$weedpid" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

(cd "$root" && go build -o "$tmp/sparkprof" ./cmd/sparkprof && go build -o "$tmp/send" ./bench/server/send)
[ -n "${SERVER:-}" ] && cp "$SERVER" "$tmp/sparkprof"

# SeaweedFS: every port named (its gRPC ports default to the HTTP port plus
# 10,000), anonymous access (no AWS_* in its environment), one bucket.
p=$((20000 + RANDOM % 10000))
s3="http://127.0.0.1:$((p + 6))"
bucket=scaleout
mkdir -p "$tmp/weed"
setsid env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY "$weed" mini -dir="$tmp/weed" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
	-master.port=$p -master.port.grpc=$((p + 1)) -volume.port=$((p + 2)) -volume.port.grpc=$((p + 3)) \
	-filer.port=$((p + 4)) -filer.port.grpc=$((p + 5)) -s3.port=$((p + 6)) -s3.port.grpc=$((p + 7)) \
	-s3.port.iceberg=0 -s3.port.lance=0 -webdav=false -admin.ui=false -master.telemetry=false \
	-master.volumeSizeLimitMB=64 -bucket=$bucket >"$tmp/weed.log" 2>&1 &
weedpid=$!
until curl -sf -o /dev/null -I "$s3/$bucket"; do
	kill -0 "$weedpid" 2>/dev/null || { tail "$tmp/weed.log" >&2; exit 1; }
	sleep 0.2
done

export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench AWS_REGION=us-east-1
tck=$(getconf CLK_TCK)
# cpu: the nodes' user+system time so far, in ms.
cpu() { for q in "${nodepids[@]}"; do cat "/proc/$q/stat"; done | awk -v t="$tck" '{s += $14 + $15} END {print int(s * 1000 / t)}'; }
# shipped: the uploads the nodes' flushes shipped to the bucket so far.
shipped() { cat "$tmp"/n"$n"-*.log | awk '/flushed head segment/ {for (i = 1; i <= NF; i++) if ($i ~ /^uploads=/) {sub(/^uploads=/, "", $i); s += $i}} END {print s + 0}'; }
# metric NAME: its sum over the nodes.
metric() { for u in "${urls[@]}"; do curl -s "$u/metrics"; done | awk -v m="$1" '$1 == m || index($1, m "{") == 1 {s += $NF} END {print s + 0}'; }

echo "machine: $(nproc) CPUs; recording $(basename "$rec"); $uploads uploads after $warmup, $conc in flight; nodes of role ${ROLE:-ingest}"
for n in ${NODES:-1 2 3}; do
	nodepids=() urls=()
	for i in $(seq "$n"); do
		port=$((p + 10 + 10 * n + i))
		"$tmp/sparkprof" serve --addr "127.0.0.1:$port" --data "$tmp/n$n-$i" --retention 0 \
			--storage "s3://$bucket/run$n?endpoint=$s3&region=us-east-1&use_path_style=true&disable_https=true" \
			--flush-interval "${FLUSH:-10s}" --role "${ROLE:-ingest}" >"$tmp/n$n-$i.log" 2>&1 &
		nodepids+=($!) urls+=("http://127.0.0.1:$port")
	done
	for i in "${!urls[@]}"; do
		until curl -sf -o /dev/null "${urls[$i]}/ready"; do
			kill -0 "${nodepids[$i]}" 2>/dev/null || { tail "$tmp/n$n-$((i + 1)).log" >&2; exit 1; }
			sleep 0.1
		done
	done
	servers=$(IFS=,; echo "${urls[*]}")
	"$tmp/send" -server "$servers" -concurrency "$conc" -n "$warmup" "$rec"
	before=$(cpu) start=$(date +%s%N)
	"$tmp/send" -server "$servers" -concurrency "$conc" -first "$warmup" -n "$uploads" "$rec"
	elapsed=$((($(date +%s%N) - start) / 1000000))
	used=$(($(cpu) - before))
	# Until the bucket has every upload (at most 10 minutes).
	for _ in $(seq 3000); do
		[ "$(shipped)" -ge $((warmup + uploads)) ] && break
		sleep 0.2
	done
	inbucket=$((($(date +%s%N) - start) / 1000000))
	awk -v n="$n" -v u="$uploads" -v e="$elapsed" -v c="$used" -v f="$(metric sparkprof_bucket_flushes_total)" \
		-v x="$(metric sparkprof_bucket_errors_total)" -v l="$(cut -d' ' -f1-3 /proc/loadavg)" -v b="$inbucket" -v s="$(shipped)" -v w="$warmup" 'BEGIN {
		printf "nodes %d: %.1f uploads/s acknowledged (%d in %.1f s); %d of %d shipped after %.1f s; nodes CPU %.1f ms/upload; %d flushes, %d bucket errors; load average %s\n",
			n, u * 1000 / e, u, e / 1000, s, u + w, b / 1000, c / u, f, x, l
	}'
	for q in "${nodepids[@]}"; do kill "$q"; wait "$q" 2>/dev/null || true; done
done
