#!/usr/bin/env bash
# Runs sparkprof's offline commands on the real sample data and writes the
# results to out/, with out/index.html linking them.
set -euo pipefail
cd "$(dirname "$0")/.."
td=${1:-../shared/testdata}
bin=bin/sparkprof
out=out
mkdir -p "$out"
[ -d "$td" ] || { echo "demo: sample data not found at $td" >&2; exit 1; }

links=()
run() { # run DESCRIPTION OUTPUT COMMAND...
	local desc=$1 file=$2
	shift 2
	echo "+ sparkprof $*" >&2
	"$bin" "$@"
	links+=("<li><a href=\"$(basename "$file")\">$desc</a></li>")
}
# report DESCRIPTION NAME INPUTS...: the analysis of INPUTS as an HTML page
# (NAME.html) and as text, shown once and kept (NAME.txt).
report() {
	local desc=$1 name=$2
	shift 2
	echo "+ sparkprof analyze --html $out/$name.html $*" >&2
	"$bin" analyze --html "$out/$name.html" "$@" | tee "$out/$name.txt"
	links+=("<li><a href=\"$name.html\">$desc</a> (<a href=\"$name.txt\">as text</a>)</li>")
}

run "Phil's straggler riddle (Uber jvm-profiler): CPU-busy threads" "$out/straggler.html" \
	flame -o "$out/straggler.html" --state RUNNABLE "$td/jvm-profiler/phil_stopwatch/ProfileStraggler/Stacktrace.json.gz" || true
run "async-profiler recording of a gRPC service (JFR, 200k samples)" "$out/async-profiler.html" \
	flame -o "$out/async-profiler.html" "$td/jfr/async-profiler.jfr.gz"
run "Kafka broker: allocation flame graph (JFR)" "$out/kafka-alloc.svg" \
	flame -o "$out/kafka-alloc.svg" --type alloc "$td/jfr/cortex-dev-01__kafka-0__cpu_lock0_alloc0__0.jfr.gz"
run "Kafka broker: lock contention (JFR)" "$out/kafka-lock.html" \
	flame -o "$out/kafka-lock.html" --type lock "$td/jfr/cortex-dev-01__kafka-0__cpu_lock0_alloc0__0.jfr.gz"
run "Diff: JVM straggler run vs PySpark straggler run (Uber records)" "$out/diff.html" \
	diff -o "$out/diff.html" "$td/jvm-profiler/phil_stopwatch/profile_straggler/Stacktrace.json.gz" \
	"$td/jvm-profiler/phil_stopwatch/ProfileStraggler/Stacktrace.json.gz"
report "Analysis of Phil's straggler riddle: console log + Uber CPU/memory and stack records (timeline, findings, where the straggler's time went)" \
	straggler-report "$td/applogs/phil_stopwatch/ProfileStraggler/JobStraggler.log.gz" "$td/jvm-profiler/phil_stopwatch/ProfileStraggler/"
report "Analysis of Phil's PySpark straggler riddle: the JVM thread waits for its Python worker" \
	pyspark-straggler-report "$td/applogs/phil_stopwatch/profile_straggler/" "$td/jvm-profiler/phil_stopwatch/profile_straggler/"
report "Analysis of a YARN app with failed tasks and lost executors (event log)" \
	failures-report "$td/eventlogs/nvidia/tasks_executors_fail_compressed_eventlog.zstd"
"$bin" top -n 15 "$td/jvm-profiler/phil_stopwatch/ProfileStraggler/Stacktrace.json.gz" | tee "$out/straggler-top.txt"
links+=("<li><a href=\"straggler-top.txt\">Top functions of the straggler riddle</a></li>")

{
	echo '<!doctype html><meta charset="utf-8"><title>sparkprof demo</title>'
	echo '<h1>sparkprof demo on the real sample data</h1><ul>'
	printf '%s\n' "${links[@]}"
	echo '</ul>'
} >"$out/index.html"
echo "demo: open $out/index.html" >&2
