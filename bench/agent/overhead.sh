#!/usr/bin/env bash
# The agent's overhead: the same CPU-bound multi-threaded workload with and
# without -javaagent at default settings (10 ms CPU sampling, 10 s uploads to
# a local sparkprof serve), alternating runs, then the time ratios (median
# and best run), the CPU time the JVM used, and the heap and RSS the agent
# adds. CPU time is the steadier figure on a shared machine: the work is
# fixed, so whatever the agent costs (its threads, stalls of the workload's
# threads) shows up as extra CPU seconds.
#
# usage: bench/agent/overhead.sh [RUNS (default 5)] [ITERATIONS per thread]
# AGENT_OPTIONS adds agent options, e.g. AGENT_OPTIONS=asyncProfiler=/path/to/libasyncProfiler.so
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
runs=${1:-5}
iters=${2:-3000000000}
threads=$(nproc)
tmp=$(mktemp -d)
# shellcheck source=common.sh
. "$root/bench/agent/common.sh"

# jiffies: the machine's idle (idle + iowait) and total CPU time so far, all CPUs (/proc/stat).
jiffies() { awk '/^cpu / {t = 0; for (i = 2; i <= NF; i++) t += $i; print $5 + $6, t}' /proc/stat; }

# run LABEL [JVM flags...]: prints elapsed ms, heap used after the run (bytes), peak RSS (KiB), CPU time (ms)
# and the share of the machine's CPU time that sat idle during the run (per mille): with every core busy,
# time a workload thread spends stalled (suspended for a stack walk, say) shows up there.
run() {
	# first argument: label only
	shift
	local before after
	before=$(jiffies)
	/usr/bin/time -f "rss_kib=%M cpu_s=%U %S" java -Xmx512m "$@" -cp "$tmp" CpuBench "$threads" "$iters" 2>&1 |
		awk '/elapsed_ms/ {printf "%s %s ", $1, $2} /rss_kib/ {sub("cpu_s=", "", $2); printf "%s cpu_ms=%d ", $1, ($2 + $3) * 1000}'
	after=$(jiffies)
	echo "$before $after" | awk '{printf "idle_permille=%d\n", 1000 * ($3 - $1) / ($4 - $2)}'
}
echo "workload: $threads threads x $iters iterations, $runs runs each, alternating (odd pairs without the agent first, even pairs with it first)"
base=() agentr=()
# Pairs alternate which run goes first (without, with; with, without; ...): on a machine that speeds up or slows
# down over the minutes, always running the agent second would bias every pair the same way.
for i in $(seq "$runs"); do
	if ((i % 2)); then
		b=$(run base)
		a=$(run agent "$agent")
	else
		a=$(run agent "$agent")
		b=$(run base)
	fi
	echo "run $i  without: $b"
	echo "run $i  with:    $a"
	base+=("$b")
	agentr+=("$a")
done
summary() { # field values...
	local field=$1
	shift
	printf '%s\n' "$@" | grep -o "$field=[0-9]*" | cut -d= -f2 | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
bt=$(summary elapsed_ms "${base[@]}")
at=$(summary elapsed_ms "${agentr[@]}")
bc_=$(summary cpu_ms "${base[@]}")
ac=$(summary cpu_ms "${agentr[@]}")
best() { # field values...: the smallest
	local field=$1
	shift
	printf '%s\n' "$@" | grep -o "$field=[0-9]*" | cut -d= -f2 | sort -n | head -1
}
bb=$(best elapsed_ms "${base[@]}")
ab=$(best elapsed_ms "${agentr[@]}")
bh=$(summary heap_used "${base[@]}")
ah=$(summary heap_used "${agentr[@]}")
br=$(summary rss_kib "${base[@]}")
ar=$(summary rss_kib "${agentr[@]}")
echo "median elapsed: without $bt ms, with $at ms, ratio $(echo "scale=4; $at / $bt" | bc)"
echo "best elapsed: without $bb ms, with $ab ms, ratio $(echo "scale=4; $ab / $bb" | bc)"
echo "median CPU time: without $bc_ ms, with $ac ms, ratio $(echo "scale=4; $ac / $bc_" | bc)"
echo "median heap after GC: without $((bh >> 10)) KiB, with $((ah >> 10)) KiB (agent: $(((ah - bh) >> 10)) KiB)"
echo "median peak RSS: without $br KiB, with $ar KiB (agent: $((ar - br)) KiB)"
# Each pair's ratio: the runs of a pair are minutes apart at most, so the machine's drift between pairs cancels.
pairs() { # field: with/without per pair, and their median
	local field=$1 i r rs=()
	for i in "${!base[@]}"; do
		r=$(echo "${base[$i]} ${agentr[$i]}" | grep -o "$field=[0-9]*" | cut -d= -f2 | paste -sd' ' | awk '{printf "%.3f", $2 / $1}')
		rs+=("$r")
	done
	echo "${rs[*]} (median $(printf '%s\n' "${rs[@]}" | sort -n | awk '{a[NR]=$1} END {print (a[int((NR+1)/2)] + a[int(NR/2)+1]) / 2}'))"
}
echo "elapsed ratio per pair: $(pairs elapsed_ms)"
echo "CPU ratio per pair: $(pairs cpu_ms)"
echo "median idle share of the machine: without $(summary idle_permille "${base[@]}") ‰, with $(summary idle_permille "${agentr[@]}") ‰"
echo "uploads received: $(curl -s "$url/metrics" | grep '^sparkprof_uploads_total' | cut -d' ' -f2)"
