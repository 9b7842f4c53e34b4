#!/usr/bin/env bash
# Builds agent/build/sparkprof-agent.jar for Java 11+ with the JDK's javac
# and jar alone: the agent has no dependencies. It compiles against the
# compile-only Spark API in spark-api/, which is not packed into the jar (so
# that the build needs no Spark), and against the real Spark jars of every
# installed Spark line, then compiles the tests and runs the unit tests.
set -euo pipefail
cd "$(dirname "$0")"
rm -rf build
mkdir -p build/api build/classes build/test
javac --release 11 -nowarn -d build/api $(find spark-api -name '*.java')
javac --release 11 -Xlint:all -Werror -cp build/api -d build/classes $(find src -name '*.java')
# The API copies stand in for Spark's own: where scripts/spark-install.sh has
# installed the Spark lines of tools/spark/versions, the agent must compile
# against each line's real jars too (CI installs them).
for jars in ../build/spark/*/lib/python3*/site-packages/pyspark/jars; do
	[ -d "$jars" ] || continue
	rm -rf build/real && mkdir -p build/real
	javac --release 11 -Xlint:all,-path -Werror -cp "$jars/*" -d build/real $(find src -name '*.java')
	echo "agent: compiles against $(basename "$(ls "$jars"/spark-core_*.jar)")"
done
rm -rf build/real
cat >build/manifest.txt <<MF
Premain-Class: dev.sparkprof.agent.Agent
Agent-Class: dev.sparkprof.agent.Agent
Implementation-Title: sparkprof-agent
MF
jar --create --date=1980-01-01T00:00:02Z --file build/sparkprof-agent.jar --manifest build/manifest.txt -C build/classes .
# The test workload: test-time stand-ins for Spark's classes first, then
# the compile-only interfaces.
javac --release 11 -nowarn -cp build/api:build/classes -d build/test $(find test -name '*.java')
echo "agent: built build/sparkprof-agent.jar ($(stat -c %s build/sparkprof-agent.jar) bytes)"
java -cp build/test:build/classes:build/api dev.sparkprof.agent.AgentUnitTest
