#!/usr/bin/env bash
# Prints the `--preload` arguments of the sample data in TESTDATA that
# scripts/demo-preload.txt lists, one a line, for `sparkprof serve`.
#
#   scripts/demo-preload.sh TESTDATA
set -euo pipefail
td=${1:?usage: demo-preload.sh TESTDATA}
list="$(dirname "$0")/demo-preload.txt"
[ -d "$td" ] || { echo "demo-preload: sample data not found at $td" >&2; exit 1; }
grep -v -e '^#' -e '^$' "$list" | while IFS= read -r line; do
	case $line in
	*=*) echo "--preload=${line%%=*}=$td/${line#*=}" ;;
	*) echo "--preload=$td/$line" ;;
	esac
done
