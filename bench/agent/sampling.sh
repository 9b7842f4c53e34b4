#!/usr/bin/env bash
# What one CPU sample costs, measured apart from the machine's drift: the overhead workload
# (bench/agent/CpuBench.java) without the agent, with it at the default 10 ms interval and at 1 ms, in turn, the
# agent writing files (no server, no uploads: sampling and recording only; events=cpu). Ten times the samples
# for the same work: the extra CPU time divided by the extra samples is the cost of one sample, a figure the
# ±2 % the machine drifts between runs cannot hide. Samples are counted in the recording each run writes.
# Each round prints every run, then the cost per sample and what sampling at 10 ms costs as a share of the run.
#
# usage: bench/agent/sampling.sh [ROUNDS (default 3)] [ITERATIONS per thread (default 16000000000, ~30 s here)]
# ASYNC_PROFILER=/path/to/libasyncProfiler.so adds the same pair of runs with async-profiler recording.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
rounds=${1:-3}
iters=${2:-16000000000}
threads=$(nproc)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root"
./agent/build.sh >/dev/null 2>&1
javac -d "$tmp" bench/agent/CpuBench.java
jar=$root/agent/build/sparkprof-agent.jar

# run OPTIONS: prints "cpu_ms samples" of one run; OPTIONS empty runs without the agent.
run() {
	local flag=() cpu n=0 f
	rm -rf "$tmp/out"
	[ -n "$1" ] && flag=("-javaagent:$jar=outputDir=$tmp/out,events=cpu,$1")
	cpu=$(/usr/bin/time -f "cpu %U %S" java -Xmx512m "${flag[@]}" -cp "$tmp" CpuBench "$threads" "$iters" 2>&1 |
		awk '/^cpu / {printf "%d", ($2 + $3) * 1000}')
	f=$(find "$tmp/out" -name '*.jfr' 2>/dev/null | head -1 || true)
	[ -n "$f" ] && n=$(jfr summary "$f" | awk '$1 == "jdk.ExecutionSample" {print $2}')
	echo "$cpu $n"
}

variants=("jfr|")
[ -n "${ASYNC_PROFILER:-}" ] && variants+=("async-profiler|asyncProfiler=$ASYNC_PROFILER,")
echo "workload: $threads threads x $iters iterations; $rounds rounds"
for r in $(seq "$rounds"); do
	read -r base _ < <(run "")
	echo "round $r  without the agent: cpu ${base} ms"
	for v in "${variants[@]}"; do
		name=${v%%|*} opts=${v#*|}
		read -r c10 n10 < <(run "${opts}interval=10ms")
		read -r c1 n1 < <(run "${opts}interval=1ms")
		echo "round $r  $name: 10 ms: cpu $c10 ms, $n10 samples; 1 ms: cpu $c1 ms, $n1 samples" |
			awk -v b="$base" -v c10="$c10" -v n10="$n10" -v c1="$c1" -v n1="$n1" '{
				us = (c1 - c10) * 1000 / (n1 - n10)
				printf "%s; %.0f us per sample; at 10 ms sampling is %.2f %% of the run, the rest of the agent %.2f %%\n",
					$0, us, 100 * n10 * us / 1000 / b, 100 * (c10 - b - n10 * us / 1000) / b
			}'
	done
done
