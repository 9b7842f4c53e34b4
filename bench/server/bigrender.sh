#!/usr/bin/env bash
# The server's render of a big profile: bench/bigprofile's 60,000 deep
# stacks (a call tree of 1.6 million nodes) imported into a fresh
# `sparkprof serve` of each build given, then /api/v1/render at
# maxNodes=16384 (what the flame graph page asks for) RUNS times,
# alternating between the builds: prints each time, the medians and
# their ratio, and checks that both builds answer the same bytes.
#
# usage: [RUNS=7] bench/server/bigrender.sh BIN [BIN2]
#   (BIN: a sparkprof binary; build an old one with
#    git worktree add /tmp/old REV && (cd /tmp/old && go build -o /tmp/old.bin ./cmd/sparkprof))
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
runs=${RUNS:-7}
[ $# -ge 1 ] || { echo "usage: [RUNS=7] bench/server/bigrender.sh BIN [BIN2]" >&2; exit 2; }
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"' EXIT

(cd "$root" && go run ./bench/bigprofile) | gzip -1 >"$tmp/big.folded.gz"
ports=()
for bin in "$@"; do
	port=$((20000 + RANDOM % 20000))
	# Decoding 200 MB of folded text is past the default ingest memory.
	"$bin" serve --addr 127.0.0.1:$port --data "$tmp/data-$port" --ingest-memory 4GiB >"$tmp/serve-$port.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/ready" >/dev/null && break; sleep 0.1; done
	curl -sf -X POST --data-binary @"$tmp/big.folded.gz" -H 'Content-Encoding: gzip' \
		"http://127.0.0.1:$port/api/v1/import?path=big.folded&app=big&kind=profile&format=folded" >/dev/null
	ports+=("$port")
done
sel=$(python3 -c 'import urllib.parse; print(urllib.parse.quote("{service_name=\"big\"}"))')
for i in "${!ports[@]}"; do : >"$tmp/times-$i"; done
for r in $(seq "$runs"); do
	for i in "${!ports[@]}"; do
		t=$(curl -sf -o "$tmp/render-$i.json" -w '%{time_total}' \
			"http://127.0.0.1:${ports[$i]}/api/v1/render?query=$sel&type=samples&maxNodes=16384")
		echo "$t" >>"$tmp/times-$i"
		echo "run $r, build $((i + 1)) ($(basename "${@:i+1:1}")): ${t}s"
	done
done
python3 - "$tmp" "${#ports[@]}" "$tmp/render-0.json" <<'PY'
import json, statistics, sys
tmp, n = sys.argv[1], int(sys.argv[2])
r = json.load(open(sys.argv[3]))
print(f"tree: {r['folded']} nodes folded, {sum(len(l) // 4 for l in r['flamebearer']['levels'])} drawn")
med = [statistics.median(float(x) for x in open(f"{tmp}/times-{i}")) for i in range(n)]
for i, m in enumerate(med):
    print(f"build {i + 1}: median {m * 1000:.0f} ms")
if n == 2:
    print(f"build 1 / build 2: {med[0] / med[1]:.2f}x")
PY
if [ ${#ports[@]} -eq 2 ]; then
	cmp -s "$tmp/render-0.json" "$tmp/render-1.json" && echo "both builds answer the same bytes" || echo "the builds' answers differ"
fi
