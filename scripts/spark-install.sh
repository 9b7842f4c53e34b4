#!/usr/bin/env bash
# Installs the Spark distributions the real-Spark tests run, each the
# pinned pyspark of tools/spark/versions in a virtual environment of its
# own, build/spark/VERSION. pyspark is a whole Spark distribution: jars/,
# bin/spark-submit and bin/spark-class. An environment whose pyspark is
# already the pinned version is kept, so only a changed version downloads
# again (several hundred MB). Each also gets the packages the PySpark test
# jobs import (tools/spark/requirements.txt: pandas, pyarrow).
set -euo pipefail
cd "$(dirname "$0")/.."
for v in $(grep -v '^#' tools/spark/versions); do
	dir=build/spark/$v
	if [ -x "$dir/bin/python" ] && [ "$("$dir/bin/python" -c 'import pyspark; print(pyspark.__version__)' 2>/dev/null)" = "$v" ]; then
		echo "spark-install: Spark $v is installed in $dir"
	else
		echo "spark-install: installing pyspark==$v into $dir (a download of several hundred MB)"
		rm -rf "$dir"
		python3 -m venv "$dir"
		"$dir/bin/pip" install --quiet --disable-pip-version-check "pyspark==$v"
	fi
	# The test jobs' own packages (tools/spark/requirements.txt), again
	# whenever the pins change.
	if ! cmp -s tools/spark/requirements.txt "$dir/.sparkprof-requirements"; then
		echo "spark-install: installing tools/spark/requirements.txt into $dir"
		"$dir/bin/pip" install --quiet --disable-pip-version-check -r tools/spark/requirements.txt
		cp tools/spark/requirements.txt "$dir/.sparkprof-requirements"
	fi
done
