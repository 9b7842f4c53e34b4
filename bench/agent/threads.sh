#!/usr/bin/env bash
# Where the agent's CPU goes: one run of the overhead workload (bench/agent/CpuBench.java) with the agent, a local
# sparkprof serve receiving, and the CPU time of each of the JVM's threads (user + system, from
# /proc/PID/task/*/stat, read every half second; each thread's last reading is printed), busiest first.
# The workload's own threads are named like Spark task threads; everything else is the JVM's and the agent's.
#
# usage: bench/agent/threads.sh [ITERATIONS per thread (default 32000000000, ~60 s here)]
# AGENT_OPTIONS adds agent options, e.g. AGENT_OPTIONS=asyncProfiler=/path/to/libasyncProfiler.so; THREADS sets the
# workload's threads (default: one per core) and CPUS pins the JVM to cores (taskset's list, e.g. CPUS=0), as
# bench/agent/concurrent.sh runs it.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
iters=${1:-32000000000}
threads=${THREADS:-$(nproc)}
tmp=$(mktemp -d)
# shellcheck source=common.sh
. "$root/bench/agent/common.sh"

${CPUS:+taskset -c "$CPUS"} java -Xmx512m -XX:+UseG1GC "$agent" -cp "$tmp" CpuBench "$threads" "$iters" >"$tmp/out" 2>&1 &
pid=$!
tick=$(getconf CLK_TCK)
# snapshot: "tid ms name" per thread; comm may hold spaces, so the fields are counted from the ")" that ends it.
snapshot() {
	for t in /proc/"$pid"/task/*; do
		sed -E 's/^([0-9]+) \((.*)\) (.*)$/\1 \3\t\2/' "$t/stat" 2>/dev/null
	done | awk -F'\t' -v tick="$tick" '{split($1, f, " "); printf "%s\t%d\t%s\n", f[1], (f[13] + f[14]) * 1000 / tick, $2}'
}
# Every reading is kept: a thread that ends before the JVM does (the workload's, the recorder's at shutdown) keeps
# the CPU time of its last reading.
while kill -0 "$pid" 2>/dev/null; do
	snapshot >>"$tmp/readings" || true
	sleep 0.5
done
wait "$pid" || true
cat "$tmp/out"
echo "CPU ms per thread (its last reading):"
awk -F'\t' '{ms[$1] = $2; name[$1] = $3} END {for (t in ms) printf "%d\t%s\n", ms[t], name[t]}' "$tmp/readings" | sort -rn | awk -F'\t' '{printf "%8d  %s\n", $1, $2} $2 ~ /^Executor task/ {w += $1; next} {o += $1} END {printf "workload threads %d ms, all others %d ms\n", w, o}'
