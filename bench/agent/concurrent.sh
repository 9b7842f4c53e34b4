#!/usr/bin/env bash
# The agent's overhead measured with both runs at the same time: two JVMs, each pinned to a core of its own
# (taskset), each running one busy workload thread, one with -javaagent and one without. The JVM's other threads
# (the agent's, the Flight Recorder's, the JIT compilers) share their JVM's core with its workload thread, so
# whatever the agent costs comes out of its own JVM's work, as on a node whose every core is busy. Then the
# JVMs swap cores and run again. Running side by side cancels the machine's drift from minute to minute, which
# runs one after the other (overhead.sh) cannot tell from a 1 % effect; swapping cancels a difference between
# the two cores. Each round's ratio is the geometric mean of its two placements.
#
# usage: bench/agent/concurrent.sh [ROUNDS (default 3)] [ITERATIONS (default 32000000000, ~60 s here)]
# AGENT_OPTIONS adds agent options, e.g. AGENT_OPTIONS=asyncProfiler=/path/to/libasyncProfiler.so
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
rounds=${1:-3}
iters=${2:-32000000000}
if (($(nproc) < 2)); then
	echo "concurrent.sh needs two cores" >&2
	exit 1
fi
tmp=$(mktemp -d)
# shellcheck source=common.sh
. "$root/bench/agent/common.sh"

# start CORE OUT [JVM flags...]: runs one workload thread on CORE in the background, its figures to OUT:
# elapsed ms and heap from the workload, CPU time (user + system, ms) and peak RSS from time(1). G1 as on an
# executor: on one core the JVM would pick the serial collector.
start() {
	local core=$1 out=$2
	shift 2
	taskset -c "$core" /usr/bin/time -f "rss_kib=%M cpu_s=%U %S" java -Xmx512m -XX:+UseG1GC "$@" \
		-cp "$tmp" CpuBench 1 "$iters" >"$out" 2>&1 &
}
field() { # FILE NAME: the value of NAME=... in FILE
	grep -o "$2=[0-9.]*" "$1" | head -1 | cut -d= -f2
}
cpu_ms() { # FILE: user + system time of the run, ms
	grep -o 'cpu_s=[0-9.]* [0-9.]*' "$1" | sed 's/cpu_s=//' | awk '{printf "%d", ($1 + $2) * 1000}'
}
# placement AGENT_CORE BASE_CORE: runs both at once and prints the with/without ratios of elapsed and CPU time.
placement() {
	local with without
	start "$1" "$tmp/with.out" "$agent"
	with=$!
	start "$2" "$tmp/without.out"
	without=$!
	wait "$with" && wait "$without" || {
		cat "$tmp/with.out" "$tmp/without.out" >&2
		exit 1
	}
	local we wo wc oc
	we=$(field "$tmp/with.out" elapsed_ms)
	wo=$(field "$tmp/without.out" elapsed_ms)
	wc=$(cpu_ms "$tmp/with.out")
	oc=$(cpu_ms "$tmp/without.out")
	echo "agent on cpu $1: with $we ms (cpu $wc ms, heap $(($(field "$tmp/with.out" heap_used) >> 10)) KiB)," \
		"without $wo ms (cpu $oc ms, heap $(($(field "$tmp/without.out" heap_used) >> 10)) KiB)" >&2
	echo "$we $wo $wc $oc" | awk '{printf "%.5f %.5f\n", $1 / $2, $3 / $4}'
}
echo "workload: 1 thread x $iters iterations per JVM, two JVMs at once on cores 0 and 1, $rounds rounds of two placements"
ratios=()
for i in $(seq "$rounds"); do
	a=$(placement 0 1)
	b=$(placement 1 0)
	r=$(echo "$a $b" | awk '{printf "%.4f %.4f", sqrt($1 * $3), sqrt($2 * $4)}')
	echo "round $i: elapsed ratio $(echo "$r" | cut -d' ' -f1), CPU ratio $(echo "$r" | cut -d' ' -f2)"
	ratios+=("$r")
done
median() { # column
	printf '%s\n' "${ratios[@]}" | cut -d' ' -f"$1" | sort -n | awk '{a[NR]=$1} END {printf "%.4f", (a[int((NR+1)/2)] + a[int(NR/2)+1]) / 2}'
}
echo "median over $rounds rounds: elapsed ratio $(median 1), CPU ratio $(median 2)"
echo "uploads received: $(curl -s "$url/metrics" | grep '^sparkprof_uploads_total' | cut -d' ' -f2)"
