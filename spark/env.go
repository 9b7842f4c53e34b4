package spark

import (
	"regexp"
	"sort"

	"github.com/valyala/fastjson"
)

// Environment is what an application's EnvironmentUpdate event says, as
// the History Server's environment page lists it: each section's
// properties as [name, value] pairs sorted by name. The values of
// properties that look secret are "*********(redacted)", as Spark writes
// Spark's and as the History Server shows every section's.
type Environment struct {
	// Runtime is the JVM information: Java version and home, Scala version.
	Runtime   [][2]string `json:"runtime"`
	Spark     [][2]string `json:"spark"`
	Hadoop    [][2]string `json:"hadoop,omitempty"`
	System    [][2]string `json:"system,omitempty"`
	Metrics   [][2]string `json:"metrics,omitempty"`
	Classpath [][2]string `json:"classpath,omitempty"` // [path, source]
}

// newEnvironment reads the sections of an EnvironmentUpdate event.
func newEnvironment(v *fastjson.Value) *Environment {
	return &Environment{
		Runtime:   pairs(v.Get("JVM Information")),
		Spark:     redact(pairs(v.Get("Spark Properties"))),
		Hadoop:    redact(pairs(v.Get("Hadoop Properties"))),
		System:    redact(pairs(v.Get("System Properties"))),
		Metrics:   redact(pairs(v.Get("Metrics Properties"))),
		Classpath: pairs(v.Get("Classpath Entries")),
	}
}

// pairs reads a section of properties: an object in most versions, a list
// of [name, value] pairs in some.
func pairs(v *fastjson.Value) [][2]string {
	if v == nil {
		return nil
	}
	var out [][2]string
	if o, err := v.Object(); err == nil {
		o.Visit(func(k []byte, x *fastjson.Value) {
			out = append(out, [2]string{string(k), string(x.GetStringBytes())})
		})
	} else {
		for _, kv := range v.GetArray() {
			if a := kv.GetArray(); len(a) == 2 {
				out = append(out, [2]string{string(a[0].GetStringBytes()), string(a[1].GetStringBytes())})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// secret is spark.redaction.regex's default: a property whose name or
// value it matches is shown redacted.
var secret = regexp.MustCompile(`(?i)secret|password|token|access[.]key`)

// redacted is what Spark shows for a secret value.
const redacted = "*********(redacted)"

// redact hides the values of properties that look secret, as the History
// Server's environment page does (Spark's event log redacts only Spark's
// properties: a Hadoop token setting is written as it is).
func redact(ps [][2]string) [][2]string {
	for i, p := range ps {
		if secret.MatchString(p[0]) || secret.MatchString(p[1]) {
			ps[i][1] = redacted
		}
	}
	return ps
}
