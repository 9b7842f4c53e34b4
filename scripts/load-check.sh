#!/usr/bin/env bash
# Runs `make test` RUNS times in a row (default 3) with every core saturated
# by busy loops of another process, one per core, to show that no test
# depends on how fast the machine is. Stops at the first failing run.
# MAKEARGS go to make (TESTSTEPS="unit fuzz" runs those steps only).
#
#   scripts/load-check.sh [RUNS [MAKEARGS...]]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
shift || true
loops=()
stop_loops() {
	for pid in "${loops[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
}
trap stop_loops EXIT
for _ in $(seq "$(nproc)"); do
	sh -c 'while :; do :; done' &
	loops+=($!)
done
echo "load-check: ${#loops[@]} busy loops (pids ${loops[*]}) on $(nproc) cores"
for i in $(seq "$runs"); do
	start=$(date +%s)
	echo "load-check: run $i of $runs: make test (load average $(cut -d' ' -f1-3 /proc/loadavg))"
	if ! make test "$@"; then
		echo "load-check: run $i failed after $(($(date +%s) - start)) s"
		exit 1
	fi
	echo "load-check: run $i passed in $(($(date +%s) - start)) s (load average $(cut -d' ' -f1-3 /proc/loadavg))"
done
echo "load-check: $runs of $runs runs passed"
