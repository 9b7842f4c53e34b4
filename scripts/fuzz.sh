#!/usr/bin/env bash
# Runs every Go fuzz target of the module for $FUZZTIME each (default 4s).
# A failure prints the fuzzer's output. A run that fails without a failing
# input (the fuzzing engine's own trouble, e.g. a worker that did not answer
# in time on a loaded machine) is run once more; a failing input always
# fails the script, and Go keeps it under the package's testdata/fuzz.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-4s}
count=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for pkg in $(go list ./...); do
	for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "fuzz $pkg $target ($fuzztime)"
		for attempt in 1 2; do
			if go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime=0 "$pkg" >"$log" 2>&1; then
				break
			fi
			if grep -q 'Failing input written to' "$log" || [ "$attempt" = 2 ]; then
				cat "$log"
				echo "fuzz: $pkg $target failed" >&2
				exit 1
			fi
			echo "fuzz: $target failed without a failing input; running it again:"
			tail -n 5 "$log"
		done
		count=$((count + 1))
	done
done
echo "fuzz: $count targets ran for $fuzztime each, no failures"
