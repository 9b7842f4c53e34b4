#!/usr/bin/env bash
# Runs every Go fuzz target of the module for $FUZZTIME each (default 4s).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-4s}
count=0
for pkg in $(go list ./...); do
	for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "fuzz $pkg $target ($fuzztime)"
		go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime=0 "$pkg" >/dev/null
		count=$((count + 1))
	done
done
echo "fuzz: $count targets ran for $fuzztime each, no failures"
