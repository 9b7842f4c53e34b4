#!/usr/bin/env bash
# analyze's CPU per byte on logs of different shapes, against a bare fastjson
# decode of the fields it needs, and its peak RSS per GiB of log: a log of
# SIZE is generated from each source (the corpus's real logs: SQL apps of many
# small tasks, AQE shuffles, a dynamic-allocation run, a Photon query of few
# large tasks, a local app), then each step runs RUNS times and the least CPU
# (user + system, from time(1)) is kept. CPU, not wall time, so that a busy
# machine changes the figures little; on two cores analyze's wall time is
# about half its CPU time, so CPU per byte at 1.33× fastjson's is the line
# where analyze runs 1.5× faster than a one-core fastjson decode. RSS per
# GiB is the peak RSS over the log's size: the binary's own ~47 MiB (its
# RSS on a log of 1 MB) weigh 4× in it at 256M, hence 1 GiB by default.
#
# usage: [RUNS=3] bench/eventlog/shapes.sh [SIZE (default 1G)] [SPARKPROF (default: built here)] [SOURCE...]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
size=${1:-1G}
td=$root/../shared/testdata/eventlogs
runs=${RUNS:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root"
go build -o "$tmp/tool" ./bench/eventlog/tool
sp=${2:-}
if [[ -z $sp ]]; then
	go build -o "$tmp/sparkprof" ./cmd/sparkprof
	sp=$tmp/sparkprof
fi
shift 2 2>/dev/null || shift $#
sources=("$@")
if ((${#sources[@]} == 0)); then
	sources=("$td/nvidia/tasks_executors_fail_compressed_eventlog.zstd" "$td/nvidia/rp_sql_eventlog.zstd"
		"$td/nvidia/aqeshuffle_eventlog.zstd" "$td/nvidia/eventlog_4nodes_8cores_dynamic_alloc.zstd"
		"$td/nvidia/nds_q88_photon_db_13_3.zstd" "$td/apache/local-1642039451826")
fi

# least_cpu CMD...: the least user + system seconds of $runs runs of CMD, and
# the peak RSS (KiB) of that run.
least_cpu() {
	local best="" rss=""
	for _ in $(seq "$runs"); do
		read -r u s m < <(/usr/bin/time -f "%U %S %M" "$@" 2>&1 >/dev/null | tail -1)
		local c
		c=$(echo "$u + $s" | bc -l)
		if [[ -z $best ]] || (($(echo "$c < $best" | bc -l))); then
			best=$c rss=$m
		fi
	done
	echo "$best $rss"
}

printf '%-48s %14s %14s %10s %12s\n' "log (generated from)" "fastjson MB/s" "analyze MB/s" "CPU ratio" "RSS MiB/GiB"
for src in "${sources[@]}"; do
	log=$tmp/app.log
	"$tmp/tool" gen -size "$size" -o "$log" "$src" >/dev/null
	bytes=$(stat -c %s "$log")
	read -r fj _ < <(least_cpu "$tmp/tool" decode -mode fastjson "$log")
	read -r an rss < <(least_cpu "$sp" analyze --json "$log")
	printf '%-48s %14.0f %14.0f %10.2f %12.0f\n' "$(basename "$src")" \
		"$(echo "$bytes / 1000000 / $fj" | bc -l)" "$(echo "$bytes / 1000000 / $an" | bc -l)" \
		"$(echo "$an / $fj" | bc -l)" "$(echo "$rss * 1073741824 / 1024 / $bytes" | bc -l)"
	rm -f "$log"
done
