// Package pyroscope holds the naming conventions of Pyroscope's protocols
// that sparkprof's ingest and query both follow: the profile-type suffixes
// of application names ("myapp.cpu"), the units of an upload, the
// five-part profile type IDs, the label names other agents give Spark's
// labels, and the units Pyroscope's render answer gives a type.
package pyroscope

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sparkprof/sparkprof/profile"
)

// NameLabel is the label Pyroscope's selectors name the profile type by
// (its ID's first part, or the whole ID).
const NameLabel = "__name__"

// TypeLabel is the label Pyroscope gives a profile's type ID.
const TypeLabel = "__profile_type__"

// labelAliases maps label names other agents use to the standard ones:
// CERN's PyroscopePlugin's, Spark's configuration keys, and the labels
// Spark puts on its Kubernetes pods (spark-app-selector, spark-exec-id,
// spark-role) as a collector such as Grafana Alloy passes them on, with
// underscores.
var labelAliases = map[string]string{
	"appId": profile.LabelAppID, "app_id": profile.LabelAppID, "spark.app.id": profile.LabelAppID, "spark_app_selector": profile.LabelAppID,
	"executorId": profile.LabelExecutorID, "executor_id": profile.LabelExecutorID, "spark.executor.id": profile.LabelExecutorID, "spark_exec_id": profile.LabelExecutorID,
	"hostname": profile.LabelHost, "hostName": profile.LabelHost,
	"attemptId":  profile.LabelAppAttempt,
	"spark_role": profile.LabelRole,
}

// StandardLabel returns the standard name of a label other agents name
// name, or name itself.
func StandardLabel(name string) string {
	if std, ok := labelAliases[name]; ok {
		return std
	}
	return name
}

// typeSuffixes are the profile-type suffixes Pyroscope agents append to
// the application name ("myapp.cpu") and the sample types they name.
var typeSuffixes = []struct {
	suffix string
	typ    profile.SampleType
}{
	{".cpu", profile.TypeCPU}, {".itimer", profile.TypeCPU}, {".wall", profile.TypeWall},
	{".alloc_objects", profile.TypeAllocObjects}, {".alloc_in_new_tlab_objects", profile.TypeAllocObjects},
	{".alloc_space", profile.TypeAllocBytes}, {".alloc_in_new_tlab_bytes", profile.TypeAllocBytes},
	{".lock_count", profile.TypeLockCount}, {".lock_duration", profile.TypeLockDelay},
}

// CutTypeSuffix returns app without a Pyroscope profile-type suffix, and
// the sample type the suffix names (zero without one).
func CutTypeSuffix(app string) (string, profile.SampleType) {
	for _, t := range typeSuffixes {
		if name, ok := strings.CutSuffix(app, t.suffix); ok {
			return name, t.typ
		}
	}
	return app, profile.SampleType{}
}

// units maps the units a Pyroscope upload declares to the sample type they
// imply, where the name has no type suffix.
var units = map[string]profile.SampleType{
	"objects": profile.TypeAllocObjects, "bytes": profile.TypeAllocBytes,
	"lock_samples": profile.TypeLockCount, "lock_nanoseconds": profile.TypeLockDelay,
}

// TypeOfUnits returns the sample type an upload's units imply, zero for
// none.
func TypeOfUnits(u string) profile.SampleType { return units[u] }

// typeIDs are the Pyroscope profile type IDs
// (name:sample_type:sample_unit:period_type:period_unit) sparkprof gives
// its sample types: those Pyroscope's own agents use for the same measure.
var typeIDs = map[profile.SampleType]string{
	profile.TypeCPU:          "process_cpu:cpu:nanoseconds:cpu:nanoseconds",
	profile.TypeItimer:       "process_cpu:itimer:count:cpu:nanoseconds",
	profile.TypeSamples:      "process_cpu:samples:count:cpu:nanoseconds",
	profile.TypeWall:         "wall:wall:nanoseconds:wall:nanoseconds",
	profile.TypeAllocObjects: "memory:alloc_objects:count:space:bytes",
	profile.TypeAllocBytes:   "memory:alloc_space:bytes:space:bytes",
	profile.TypeLiveObjects:  "memory:inuse_objects:count:space:bytes",
	profile.TypeLiveBytes:    "memory:inuse_space:bytes:space:bytes",
	profile.TypeLockCount:    "mutex:contentions:count:mutex:count",
	profile.TypeLockDelay:    "mutex:delay:nanoseconds:mutex:count",
}

// sampleTypes maps the sample types of Pyroscope's profile type IDs, by
// "sample_type:sample_unit", to sparkprof's where the names differ (others,
// like cpu:nanoseconds, are sparkprof's own). sparkprof keeps one
// allocation type and one lock type per JVM where Pyroscope splits them by
// event (inside or outside a TLAB, monitor or park), so the IDs of either
// part select the whole.
var sampleTypes = map[string]profile.SampleType{
	"alloc_space:bytes":                profile.TypeAllocBytes,
	"inuse_objects:count":              profile.TypeLiveObjects,
	"inuse_space:bytes":                profile.TypeLiveBytes,
	"alloc_in_new_tlab_objects:count":  profile.TypeAllocObjects,
	"alloc_outside_tlab_objects:count": profile.TypeAllocObjects,
	"alloc_sample_objects:count":       profile.TypeAllocObjects,
	"alloc_in_new_tlab_bytes:bytes":    profile.TypeAllocBytes,
	"alloc_outside_tlab_bytes:bytes":   profile.TypeAllocBytes,
	"alloc_sample_bytes:bytes":         profile.TypeAllocBytes,
	"live:count":                       profile.TypeLiveObjects,
	"contentions:count":                profile.TypeLockCount,
	"delay:nanoseconds":                profile.TypeLockDelay,
}

// CPUTypeID is the profile type ID of CPU time, the example errors give.
var CPUTypeID = typeIDs[profile.TypeCPU]

// TypeID returns the Pyroscope profile type ID of t; a type without a
// Pyroscope counterpart gets its name as the profile and sample type.
func TypeID(t profile.SampleType) string {
	if id, ok := typeIDs[t]; ok {
		return id
	}
	return t.Name + ":" + t.Name + ":" + t.Unit + ":" + t.Name + ":" + t.Unit
}

// TypeOfID returns the sample type a Pyroscope profile type ID selects.
func TypeOfID(id string) (profile.SampleType, error) {
	parts := strings.Split(id, ":")
	if len(parts) != 5 || slices.Contains(parts, "") {
		return profile.SampleType{}, fmt.Errorf("profile type %q: want name:sample_type:sample_unit:period_type:period_unit, e.g. %s", id, CPUTypeID)
	}
	sample := profile.SampleType{Name: parts[1], Unit: parts[2]}
	if t, ok := sampleTypes[sample.String()]; ok {
		return t, nil
	}
	return sample, nil
}

// RenderUnits returns the units and sample rate Pyroscope's render answer
// gives a sample type, which its UI knows how to show: "samples" are time
// at the rate, so CPU and wall nanoseconds are samples at 10⁹ a second;
// lock types take the units of Pyroscope's uploads.
func RenderUnits(t profile.SampleType) (string, int) {
	switch {
	case t.Unit == "nanoseconds" && t != profile.TypeLockDelay:
		return "samples", 1_000_000_000
	case t.Name == "alloc_objects", t.Name == "live_objects", t.Name == "samples":
		return "objects", 100
	}
	for u, ut := range units {
		if ut == t && u != "objects" {
			return u, 100
		}
	}
	return t.Unit, 100
}
