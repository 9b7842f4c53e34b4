#!/usr/bin/env bash
# Compares end to end, on the same decompressed JFR file, sparkprof's JFR
# decoder (bench/jfr/decode) with the JDK's `jfr print --events
# jdk.ExecutionSample FILE`, and prints the wall-time ratio.
#
# usage: bench/jfr/vs_jdk.sh [FILE.jfr[.gz]] [RUNS]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
file=${1:-$root/../shared/testdata/jfr/cortex-dev-01__kafka-0__cpu_lock0_alloc0__0.jfr.gz}
runs=${2:-5}
command -v jfr >/dev/null || { echo "vs_jdk.sh: the JDK's jfr tool is not on PATH" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
case $file in
*.gz) gzip -dc "$file" >"$tmp/in.jfr" ;;
*) cp "$file" "$tmp/in.jfr" ;;
esac
(cd "$root" && go build -o "$tmp/decode" ./bench/jfr/decode)

# elapsed CMD... prints the wall seconds of running CMD $runs times.
elapsed() {
	local start end
	start=$(date +%s.%N)
	for _ in $(seq "$runs"); do "$@" >/dev/null; done
	end=$(date +%s.%N)
	echo "$end - $start" | bc -l
}
go_s=$(elapsed "$tmp/decode" "$tmp/in.jfr")
jdk_s=$(elapsed jfr print --events jdk.ExecutionSample "$tmp/in.jfr")
printf 'file: %s (%d bytes), %d runs each\n' "$(basename "$file")" "$(stat -c %s "$tmp/in.jfr")" "$runs"
printf 'sparkprof decode:   %8.3f s/run\n' "$(echo "$go_s / $runs" | bc -l)"
printf 'jfr print (JDK):    %8.3f s/run\n' "$(echo "$jdk_s / $runs" | bc -l)"
printf 'ratio (JDK/sparkprof): %.1fx\n' "$(echo "$jdk_s / $go_s" | bc -l)"
