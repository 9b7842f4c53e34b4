#!/usr/bin/env bash
# Where the agent's CPU goes: one run of the overhead workload (bench/agent/CpuBench.java) with the agent, a local
# sparkprof serve receiving, and the CPU time of each of the JVM's threads (user + system, from
# /proc/PID/task/*/stat, read every half second; the last reading before the JVM exits is printed), busiest first.
# The workload's own threads are named like Spark task threads; everything else is the JVM's and the agent's.
#
# usage: bench/agent/threads.sh [ITERATIONS per thread (default 32000000000, ~60 s here)]
# AGENT_OPTIONS adds agent options, e.g. AGENT_OPTIONS=asyncProfiler=/path/to/libasyncProfiler.so
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
iters=${1:-32000000000}
threads=$(nproc)
tmp=$(mktemp -d)
# shellcheck source=common.sh
. "$root/bench/agent/common.sh"

java -Xmx512m "$agent" -cp "$tmp" CpuBench "$threads" "$iters" >"$tmp/out" 2>&1 &
pid=$!
tick=$(getconf CLK_TCK)
# snapshot: "ms name" per thread; comm may hold spaces, so the fields are counted from the ")" that ends it.
snapshot() {
	for t in /proc/"$pid"/task/*; do
		sed -E 's/^[0-9]+ \((.*)\) (.*)$/\2\t\1/' "$t/stat" 2>/dev/null
	done | awk -F'\t' -v tick="$tick" '{split($1, f, " "); printf "%d\t%s\n", (f[12] + f[13]) * 1000 / tick, $2}'
}
while kill -0 "$pid" 2>/dev/null; do
	s=$(snapshot) || true
	[ -n "$s" ] && echo "$s" >"$tmp/last"
	sleep 0.5
done
wait "$pid" || true
cat "$tmp/out"
echo "CPU ms per thread (last reading before exit):"
sort -rn "$tmp/last" | awk -F'\t' '{printf "%8d  %s\n", $1, $2} $2 ~ /^Executor task/ {w += $1; next} {o += $1} END {printf "workload threads %d ms, all others %d ms\n", w, o}'
