#!/usr/bin/env bash
# Compares `sparkprof analyze --json` of two binaries on the corpus and
# fails on any difference.
#
#   scripts/compare-analyze.sh OLD_BINARY NEW_BINARY [TESTDATA]
#
# TESTDATA defaults to ../shared/testdata beside the repository root. The
# inputs are every file and directory under TESTDATA/eventlogs (the goldens
# left out) that OLD_BINARY analyses, and each console-log riddle under
# applogs/ read together with its jvm-profiler/ directory, as well as the
# driver log alone. An input OLD_BINARY refuses must be refused by
# NEW_BINARY too. The one difference allowed is the finding kind logChunks,
# renamed log-chunks; it arises from container logs only.
set -euo pipefail

if [[ $# -lt 2 || $# -gt 3 ]]; then
	echo "usage: $0 OLD_BINARY NEW_BINARY [TESTDATA]" >&2
	exit 2
fi
old=$1
new=$2
root=$(cd "$(dirname "$0")/.." && pwd)
data=${3:-$root/../shared/testdata}
if [[ ! -d $data/eventlogs ]]; then
	echo "$0: no eventlogs directory in $data" >&2
	exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

compared=0
refused=0
differ=0

# compare NAME ARGS...: analyze --json with both binaries and diff.
compare() {
	local name=$1
	shift
	if ! "$old" analyze --json "$@" >"$tmp/old.json" 2>"$tmp/old.err"; then
		if "$new" analyze --json "$@" >"$tmp/new.json" 2>"$tmp/new.err"; then
			echo "DIFFER $name: the old binary refuses it, the new one analyses it"
			differ=$((differ + 1))
		else
			echo "refused $name (both)"
			refused=$((refused + 1))
		fi
		return
	fi
	if ! "$new" analyze --json "$@" >"$tmp/new.json" 2>"$tmp/new.err"; then
		echo "DIFFER $name: the new binary fails: $(head -c 300 "$tmp/new.err")"
		differ=$((differ + 1))
		return
	fi
	sed -i 's/^\( *"kind": \)"logChunks",$/\1"log-chunks",/' "$tmp/old.json"
	if ! diff -u "$tmp/old.json" "$tmp/new.json" >"$tmp/diff"; then
		echo "DIFFER $name:"
		head -n 40 "$tmp/diff"
		differ=$((differ + 1))
		return
	fi
	echo "same    $name ($(wc -c <"$tmp/new.json") bytes)"
	compared=$((compared + 1))
}

while IFS= read -r path; do
	compare "${path#"$data"/}" "$path"
done < <(find "$data/eventlogs" -mindepth 2 -not -path "$data/eventlogs/golden/*" | LC_ALL=C sort)

for riddle in ProfileStraggler/JobStraggler.log.gz profile_straggler/Straggler_PySpark.log.gz; do
	dir=${riddle%%/*}
	compare "applogs/phil_stopwatch/$riddle + jvm-profiler/phil_stopwatch/$dir" \
		"$data/applogs/phil_stopwatch/$riddle" "$data/jvm-profiler/phil_stopwatch/$dir"
done
compare applogs/nvidia/driverlog "$data/applogs/nvidia/driverlog"

echo "compare-analyze: $compared inputs identical, $refused refused by both, $differ different"
[[ $differ -eq 0 ]]
