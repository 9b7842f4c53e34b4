#!/usr/bin/env bash
# Builds agent/build/sparkprof-agent.jar with the JDK's javac and jar.
set -euo pipefail
echo "agent: not written yet"
