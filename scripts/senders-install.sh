#!/usr/bin/env bash
# Copies the pinned real profile senders of tools/senders/versions (jars
# from Maven Central) into build/senders/ with Maven, for the sender tests.
# A jar already there is kept. async-profiler's jar holds its native
# library for each platform: this machine's is extracted beside it, as
# build/senders/libasyncProfiler-VERSION.so, the agent's asyncProfiler
# option names.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build/senders
for gav in $(grep -v '^#' tools/senders/versions); do
	IFS=: read -r group artifact version <<<"$gav"
	jar=build/senders/$artifact-$version.jar
	if [ -f "$jar" ]; then
		echo "senders-install: $jar is there"
	else
		echo "senders-install: copying $gav from Maven Central into build/senders"
		mvn -q -B dependency:copy -Dartifact="$gav" -Dtransitive=false -DoutputDirectory=build/senders
	fi
	if [ "$artifact" = async-profiler ]; then
		case "$(uname -m)" in
		x86_64) platform=linux-x64 ;;
		aarch64) platform=linux-arm64 ;;
		*) echo "senders-install: async-profiler has no library for $(uname -m)" >&2; exit 1 ;;
		esac
		lib=build/senders/libasyncProfiler-$version.so
		if [ ! -f "$lib" ]; then
			python3 - "$jar" "$platform/libasyncProfiler.so" "$lib" <<'PY'
import sys, zipfile
jar, member, out = sys.argv[1:]
with zipfile.ZipFile(jar) as z, open(out + ".tmp", "wb") as f:
    f.write(z.read(member))
PY
			mv "$lib.tmp" "$lib"
			echo "senders-install: extracted $platform/libasyncProfiler.so into $lib"
		fi
	fi
done
