#!/usr/bin/env bash
# The agent's overhead on a real Spark job: the test jobs' CPU-bound job
# (internal/sparktest/jobs, mode "cpu": 16 tasks of 2 s over the two
# one-core executors of local-cluster[2,1,1024]) run without the plugin,
# with it (default settings, sending to a local sparkprof serve), and with
# it sending to a dead server, in turn, PAIRS rounds (5 by default).
#
# For each run it prints the job's wall time (its JobStart to its JobEnd,
# from the event log) and the CPU time of all the run's JVMs (the driver's
# and the executors', which the worker in the driver reaps: spark-submit's
# children's rusage); then, per variant, the medians and their ratios to
# the runs without the plugin, and the ratios pair by pair.
#
# With MODE=python, the job is the PySpark test job's Python-bound one
# (internal/sparktest/jobs/pyspark/planted.py, its job planted:python-udf:
# a row-at-a-time UDF over 4 tasks), and the variants are without the
# plugin, with it, and with it sampling the Python workers with py-spy
# (spark.sparkprof.python; scripts/python-tools-install.sh installs
# py-spy). UDF_ROWS sets the UDF job's rows (200,000: about 5 s; more
# make the job longer against the machine's noise).
#
# With MODE=depth, the job is the CPU-bound one, and the variants are
# without the plugin, with it (the Flight Recorder keeping 512 frames of a
# stack, the agent's default), and with it keeping the JVM's own 64
# (spark.sparkprof.stackDepth=0).
#
# VARIANTS="plugin python" runs only those of the mode's variants; the
# ratios are then against the first. PYTHON_INTERVAL sets the variant
# python's sampling period (spark.sparkprof.pythonInterval; the agent's
# default otherwise).
#
# usage: [PAIRS=5] [SPARK_VERSION=3.5.9] [MODE=jvm|python|depth] [UDF_ROWS=N]
#        [VARIANTS="V ..."] [PYTHON_INTERVAL=20ms] bench/spark/overhead.sh
# Spark must be installed (scripts/spark-install.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
pairs=${PAIRS:-5}
mode=${MODE:-jvm}
case $mode in
jvm) variants=(off plugin dead) job=cpu ;;
python) variants=(off plugin python) job=planted:python-udf ;;
depth) variants=(off plugin shallow) job=cpu ;;
*) echo "overhead: MODE=$mode: want jvm, python or depth" >&2; exit 2 ;;
esac
if [ -n "${VARIANTS:-}" ]; then
	read -ra variants <<<"$VARIANTS"
fi
pyspy=$root/build/pytools/bin/py-spy
if [ "$mode" = python ] && [ ! -x "$pyspy" ]; then
	echo "overhead: py-spy is not installed: run scripts/python-tools-install.sh" >&2
	exit 1
fi
version=${SPARK_VERSION:-$(grep -v '^#' tools/spark/versions | head -1)}
home=$(ls -d build/spark/"$version"/lib/python3*/site-packages/pyspark 2>/dev/null | head -1)
[ -n "$home" ] || { echo "overhead: Spark $version is not installed: run scripts/spark-install.sh" >&2; exit 1; }
home=$root/$home
# The environment's Python, which has the PySpark job's packages (pandas).
python=$root/build/spark/$version/bin/python
tmp=$(mktemp -d)
./agent/build.sh >/dev/null
go build -o "$tmp/sparkprof" ./cmd/sparkprof
mkdir -p "$tmp/classes" "$tmp/events"
javac --release 11 -nowarn -cp "$home/jars/*" -d "$tmp/classes" $(find internal/sparktest/jobs -name '*.java')
jar --create --file "$tmp/jobs.jar" -C "$tmp/classes" .
"$tmp/sparkprof" serve --addr 127.0.0.1:0 --data "$tmp/data" 2>"$tmp/serve.log" &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$tmp"' EXIT
until grep -q "listening on" "$tmp/serve.log"; do sleep 0.1; done
url=$(grep -o 'http://[0-9.:]*' "$tmp/serve.log" | head -1)
# A port nothing listens on: the server's, once it has stopped.
"$tmp/sparkprof" serve --addr 127.0.0.1:0 --data "$tmp/dead" 2>"$tmp/dead.log" &
dead_pid=$!
until grep -q "listening on" "$tmp/dead.log"; do sleep 0.1; done
dead=$(grep -o 'http://[0-9.:]*' "$tmp/dead.log" | head -1)
kill $dead_pid
wait $dead_pid 2>/dev/null || true

# run VARIANT prints "WALL_MS CPU_S" of one run.
run() {
	local conf=() dir
	dir=$(mktemp -d "$tmp/run.XXXX")
	case $1 in
	off) ;;
	plugin) conf=(--jars "$root/agent/build/sparkprof-agent.jar" --conf spark.plugins=dev.sparkprof.agent.SparkProfPlugin --conf "spark.sparkprof.server=$url"
		--conf spark.sparkprof.python=false) ;;
	shallow) conf=(--jars "$root/agent/build/sparkprof-agent.jar" --conf spark.plugins=dev.sparkprof.agent.SparkProfPlugin --conf "spark.sparkprof.server=$url"
		--conf spark.sparkprof.stackDepth=0 --conf spark.sparkprof.python=false) ;;
	dead) conf=(--jars "$root/agent/build/sparkprof-agent.jar" --conf spark.plugins=dev.sparkprof.agent.SparkProfPlugin --conf "spark.sparkprof.server=$dead"
		--conf spark.sparkprof.python=false) ;;
	python) conf=(--jars "$root/agent/build/sparkprof-agent.jar" --conf spark.plugins=dev.sparkprof.agent.SparkProfPlugin --conf "spark.sparkprof.server=$url"
		--conf spark.sparkprof.python=true --conf "spark.sparkprof.pySpy=$pyspy"
		${PYTHON_INTERVAL:+--conf "spark.sparkprof.pythonInterval=$PYTHON_INTERVAL"}) ;;
	esac
	local main=(--class dev.sparkprof.jobs.Jobs "$tmp/jobs.jar" cpu)
	if [ "$mode" = python ]; then
		main=("$root/internal/sparktest/jobs/pyspark/planted.py")
	fi
	/usr/bin/time -f '%U %S' -o "$dir/time" env SPARK_HOME="$home" TMPDIR="$dir" PYSPARK_PYTHON="$python" PYSPARK_DRIVER_PYTHON="$python" "$home/bin/spark-submit" \
		--master 'local-cluster[2,1,1024]' "${conf[@]}" \
		--conf spark.ui.enabled=false --conf spark.eventLog.enabled=true --conf "spark.eventLog.dir=$dir" \
		--conf "spark.local.dir=$dir" --conf "spark.driver.extraJavaOptions=-Djava.io.tmpdir=$dir" \
		--conf "spark.executor.extraJavaOptions=-Djava.io.tmpdir=$dir" \
		"${main[@]}" >"$dir/log" 2>&1
	local app
	app=$(grep -o 'JOBS DONE [a-z]* app-[0-9-]*' "$dir/log" | awk '{print $4}')
	if [ -z "$app" ]; then
		echo "overhead: a run of variant $1 failed; the end of its log:" >&2
		tail -20 "$dir/log" >&2
		return 1
	fi
	rm -rf "$home/work/$app"
	local wall
	wall=$("$tmp/sparkprof" analyze --json "$dir/$app" | python3 -c 'import json,sys; a=json.load(sys.stdin); print([j for j in a["jobs"] if j.get("description")==sys.argv[1]][0]["durationMs"])' "$job")
	echo "$wall $(awk '{print $1+$2}' "$dir/time")"
	rm -rf "$dir"
}

echo "overhead: Spark $version, $pairs rounds of ${variants[*]} (wall ms of job $job, CPU s of all its processes)"
for i in $(seq "$pairs"); do
	for v in "${variants[@]}"; do
		r=$(run $v) || exit 1
		echo "$i $v $r" | tee -a "$tmp/results"
	done
done
python3 - "$tmp/results" "${variants[@]}" <<'PY'
import statistics, sys
variants = sys.argv[2:]
rows = [l.split() for l in open(sys.argv[1])]
runs = {}
for i, v, wall, cpu in rows:
    runs.setdefault(v, {})[int(i)] = (float(wall), float(cpu))
off = runs[variants[0]]
for v in variants[1:]:
    w = [runs[v][i][0] / off[i][0] for i in off]
    c = [runs[v][i][1] / off[i][1] for i in off]
    print(f"{v} against {variants[0]}: wall ratio median {statistics.median(w):.3f} (pairs {', '.join(f'{x:.3f}' for x in w)}); "
          f"CPU ratio median {statistics.median(c):.3f} (pairs {', '.join(f'{x:.3f}' for x in c)})")
def against(a, b, what):
    w = [runs[a][i][0] / runs[b][i][0] for i in runs[b]]
    c = [runs[a][i][1] / runs[b][i][1] for i in runs[b]]
    print(f"{a} against {b} ({what}): wall ratio median {statistics.median(w):.3f} "
          f"(pairs {', '.join(f'{x:.3f}' for x in w)}); CPU ratio median {statistics.median(c):.3f} "
          f"(pairs {', '.join(f'{x:.3f}' for x in c)})")
if "python" in variants and "plugin" in variants and variants[0] != "plugin":
    against("python", "plugin", "the Python sampling alone")
if "shallow" in variants and "plugin" in variants:
    against("plugin", "shallow", "512 frames a stack against 64")
for v in variants:
    print(f"{v}: median wall {statistics.median(x[0] for x in runs[v].values()):.0f} ms, "
          f"median CPU {statistics.median(x[1] for x in runs[v].values()):.1f} s")
PY
