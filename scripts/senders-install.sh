#!/usr/bin/env bash
# Copies the pinned real profile senders of tools/senders/versions (jars
# from Maven Central) into build/senders/ with Maven, for the sender tests.
# A jar already there is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build/senders
for gav in $(grep -v '^#' tools/senders/versions); do
	IFS=: read -r group artifact version <<<"$gav"
	jar=build/senders/$artifact-$version.jar
	if [ -f "$jar" ]; then
		echo "senders-install: $jar is there"
		continue
	fi
	echo "senders-install: copying $gav from Maven Central into build/senders"
	mvn -q -B dependency:copy -Dartifact="$gav" -Dtransitive=false -DoutputDirectory=build/senders
done
