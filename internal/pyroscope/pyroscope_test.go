package pyroscope

import (
	"testing"

	"github.com/sparkprof/sparkprof/profile"
)

// TestProfileTypeIDRoundTrip checks that every type's ID selects it again.
func TestProfileTypeIDRoundTrip(t *testing.T) {
	types := []profile.SampleType{{Name: "exceptions", Unit: "count"}}
	for typ := range typeIDs {
		types = append(types, typ)
	}
	for _, typ := range types {
		got, err := TypeOfID(TypeID(typ))
		if err != nil || got != typ {
			t.Errorf("%s: ID %s selects %s (%v)", typ, TypeID(typ), got, err)
		}
	}
}

// countOthers counts a flamebearer's blocks named "other".
// Every sample type gets units Pyroscope's UI formats: a time in
// nanoseconds read as samples at 100 a second would be 10⁷ times too long.
func TestRenderUnits(t *testing.T) {
	for _, c := range []struct {
		typ   profile.SampleType
		units string
		rate  int
	}{
		{profile.TypeCPU, "samples", 1e9},
		{profile.TypeWall, "samples", 1e9},
		{profile.TypeLockDelay, "lock_nanoseconds", 100},
		{profile.TypeLockCount, "lock_samples", 100},
		{profile.TypeAllocBytes, "bytes", 100},
		{profile.TypeLiveBytes, "bytes", 100},
		{profile.TypeAllocObjects, "objects", 100},
		{profile.TypeLiveObjects, "objects", 100},
		{profile.TypeSamples, "objects", 100},
	} {
		units, rate := RenderUnits(c.typ)
		if units != c.units || rate != c.rate {
			t.Errorf("RenderUnits(%v) = %q, %d; want %q, %d", c.typ, units, rate, c.units, c.rate)
		}
	}
}
