#!/usr/bin/env bash
# The agent's start-up cost in CPU: an idle JVM (its main method sleeps) run with and without -javaagent at the
# agent's defaults, alternating, its user + system CPU from time(1); the difference is what starting the agent
# costs (the recorder's start, its generated code's compilation, the first window). With JIT=c1 the JVMs compile
# with C1 only (-XX:TieredStopAtLevel=1), to show the C2 compiler's share.
#
# usage: bench/agent/startcost.sh [ROUNDS (default 5)] [SLEEP_MS (default 8000)]
# AGENT_OPTIONS adds agent options, e.g. AGENT_OPTIONS=asyncProfiler=/path/to/libasyncProfiler.so
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
rounds=${1:-5}
sleep_ms=${2:-8000}
tmp=$(mktemp -d)
# shellcheck source=common.sh
. "$root/bench/agent/common.sh"
cat >"$tmp/Idle.java" <<'JAVA'
public class Idle {
  public static void main(String[] args) throws Exception {
    Thread.sleep(Long.parseLong(args[0]));
  }
}
JAVA
javac -d "$tmp" "$tmp/Idle.java"
jit=()
if [[ ${JIT:-} == c1 ]]; then
	jit=(-XX:TieredStopAtLevel=1)
fi
cpu_ms() { # [JVM flags...]: the CPU time of an idle JVM run, ms
	/usr/bin/time -f "%U %S" java -Xmx512m -XX:+UseG1GC "${jit[@]}" "$@" -cp "$tmp" Idle "$sleep_ms" 2>&1 >/dev/null |
		tail -1 | awk '{printf "%d", ($1 + $2) * 1000}'
}
echo "round  without agent  with agent  added (ms of CPU)"
for r in $(seq "$rounds"); do
	base=$(cpu_ms)
	with=$(cpu_ms "$agent")
	printf "%5d  %13d  %10d  %5d\n" "$r" "$base" "$with" $((with - base))
done
