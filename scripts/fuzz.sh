#!/usr/bin/env bash
# Runs every Go fuzz target of the module for $FUZZEXECS executions each
# (default 10000).
#
# The budget is a count, not a duration: with a duration (-fuzztime 4s), Go's
# fuzzing coordinator up to at least go1.26 can report "context deadline
# exceeded" as a failure when the time runs out while a worker is busy
# (go.dev/issue/75804), which a loaded CI machine hits often. A count has no
# deadline to race. A failing input always fails the script, and Go keeps it
# under the package's testdata/fuzz.
#
# A worker that spends 10 s on one input panics ("deadlocked!") into a
# stderr Go discards, and the coordinator says only "fuzzing process hung
# or terminated unexpectedly: exit status 2": look for an input that is
# slow to read (debug.SetCrashOutput in the target shows the panic).
set -euo pipefail
cd "$(dirname "$0")/.."
execs=${FUZZEXECS:-10000}
count=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for pkg in $(go list ./...); do
	for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		start=$SECONDS
		if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "${execs}x" -fuzzminimizetime=0 "$pkg" >"$log" 2>&1; then
			cat "$log"
			echo "fuzz: $pkg $target failed" >&2
			exit 1
		fi
		echo "fuzz $pkg $target: $execs executions, $((SECONDS - start)) s"
		count=$((count + 1))
	done
done
echo "fuzz: $count targets ran $execs executions each, no failures"
