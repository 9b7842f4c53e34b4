# Sourced by the agent benchmarks (overhead.sh, concurrent.sh, threads.sh), with root (the project) and tmp (a scratch
# directory) set: builds the agent jar and sparkprof, compiles the workload (CpuBench) into $tmp, starts a local
# sparkprof serve that receives the uploads, and sets url (the server) and agent (the -javaagent flag, with
# $AGENT_OPTIONS). The exit trap stops the server and removes $tmp.
cd "$root"
./agent/build.sh >/dev/null 2>&1
go build -o "$tmp/sparkprof" ./cmd/sparkprof
javac -d "$tmp" bench/agent/CpuBench.java
"$tmp/sparkprof" serve --addr 127.0.0.1:0 --data "$tmp/data" 2>"$tmp/serve.log" &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 50); do grep -q "listening on" "$tmp/serve.log" && break; sleep 0.1; done
url=$(grep -o 'http://[0-9.:]*' "$tmp/serve.log" | head -1)
agent="-javaagent:$root/agent/build/sparkprof-agent.jar=server=$url${AGENT_OPTIONS:+,$AGENT_OPTIONS}"
