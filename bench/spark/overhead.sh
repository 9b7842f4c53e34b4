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
# usage: [PAIRS=5] [SPARK_VERSION=3.5.9] bench/spark/overhead.sh
# Spark must be installed (scripts/spark-install.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
pairs=${PAIRS:-5}
version=${SPARK_VERSION:-$(grep -v '^#' tools/spark/versions | head -1)}
home=$(ls -d build/spark/"$version"/lib/python3*/site-packages/pyspark 2>/dev/null | head -1)
[ -n "$home" ] || { echo "overhead: Spark $version is not installed: run scripts/spark-install.sh" >&2; exit 1; }
home=$root/$home
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
	plugin) conf=(--jars "$root/agent/build/sparkprof-agent.jar" --conf spark.plugins=dev.sparkprof.agent.SparkProfPlugin --conf "spark.sparkprof.server=$url") ;;
	dead) conf=(--jars "$root/agent/build/sparkprof-agent.jar" --conf spark.plugins=dev.sparkprof.agent.SparkProfPlugin --conf "spark.sparkprof.server=$dead") ;;
	esac
	/usr/bin/time -f '%U %S' -o "$dir/time" env SPARK_HOME="$home" TMPDIR="$dir" "$home/bin/spark-submit" \
		--master 'local-cluster[2,1,1024]' --class dev.sparkprof.jobs.Jobs "${conf[@]}" \
		--conf spark.ui.enabled=false --conf spark.eventLog.enabled=true --conf "spark.eventLog.dir=$dir" \
		--conf "spark.local.dir=$dir" --conf "spark.driver.extraJavaOptions=-Djava.io.tmpdir=$dir" \
		--conf "spark.executor.extraJavaOptions=-Djava.io.tmpdir=$dir" \
		"$tmp/jobs.jar" cpu >"$dir/log" 2>&1
	local app
	app=$(grep -o 'JOBS DONE cpu app-[0-9-]*' "$dir/log" | awk '{print $4}')
	rm -rf "$home/work/$app"
	local wall
	wall=$("$tmp/sparkprof" analyze --json "$dir/$app" | python3 -c 'import json,sys; a=json.load(sys.stdin); print([j for j in a["jobs"] if j.get("description")=="cpu"][0]["durationMs"])')
	echo "$wall $(awk '{print $1+$2}' "$dir/time")"
	rm -rf "$dir"
}

echo "overhead: Spark $version, $pairs rounds of off, plugin, dead server (wall ms of the job, CPU s of all JVMs)"
for i in $(seq "$pairs"); do
	for v in off plugin dead; do
		r=$(run $v)
		echo "$i $v $r" | tee -a "$tmp/results"
	done
done
python3 - "$tmp/results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
runs = {}
for i, v, wall, cpu in rows:
    runs.setdefault(v, {})[int(i)] = (float(wall), float(cpu))
off = runs["off"]
for v in ("plugin", "dead"):
    w = [runs[v][i][0] / off[i][0] for i in off]
    c = [runs[v][i][1] / off[i][1] for i in off]
    print(f"{v}: wall ratio median {statistics.median(w):.3f} (pairs {', '.join(f'{x:.3f}' for x in w)}); "
          f"CPU ratio median {statistics.median(c):.3f} (pairs {', '.join(f'{x:.3f}' for x in c)})")
for v in ("off", "plugin", "dead"):
    print(f"{v}: median wall {statistics.median(x[0] for x in runs[v].values()):.0f} ms, "
          f"median CPU {statistics.median(x[1] for x in runs[v].values()):.1f} s")
PY
