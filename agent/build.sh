#!/usr/bin/env bash
# Builds agent/build/sparkprof-agent.jar for Java 11+ with the JDK's javac
# and jar alone: the agent has no dependencies. It compiles against the
# compile-only Spark API in spark-api/, which is not packed into the jar,
# then compiles the tests and runs the unit tests.
set -euo pipefail
cd "$(dirname "$0")"
rm -rf build
mkdir -p build/api build/classes build/test
javac --release 11 -nowarn -d build/api $(find spark-api -name '*.java')
javac --release 11 -Xlint:all -Werror -cp build/api -d build/classes $(find src -name '*.java')
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
