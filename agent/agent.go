// Package agent holds sparkprof's JVM agent and Spark plugin, built from
// the Java sources beside it by build.sh, as the jar embedded in the
// sparkprof binary: serve hands it out at /agent.jar, so that one binary
// is all a cluster needs.
//
// dist/sparkprof-agent.jar is built output, committed as ui/dist is: `make
// agent-dist` builds it again after the Java sources change, and `make
// agent-check` fails when it is not what they build to.
package agent

import _ "embed"

// Jar is the agent jar, sparkprof-agent.jar.
//
//go:embed dist/sparkprof-agent.jar
var Jar []byte
