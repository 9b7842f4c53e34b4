package ingest

import (
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store"
)

// Times far outside an upload's window are moved to its nearest end: the
// samples' (counted) and the profile's start and end, by which a query's
// range judges the samples of a rollup.
func TestCheckTimesClamps(t *testing.T) {
	arrived := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	from, until := arrived.Add(-20*time.Second).UnixNano(), arrived.Add(-10*time.Second).UnixNano()
	long := arrived.AddDate(-3, 0, 0).UnixNano() // a recording's own time, years before its window
	inside := from + int64(time.Second)
	tests := []struct {
		name               string
		start, end         int64
		times              []int64
		wantStart, wantEnd int64
		wantTimes          []int64
		wantClamped        int
	}{
		{"all before", long, long + int64(time.Minute), []int64{long, long + 1}, from, from, []int64{from, from}, 2},
		{"all after", until + int64(time.Hour), until + 2*int64(time.Hour), []int64{until + int64(time.Hour)}, until, until, []int64{until}, 1},
		{"around", long, until + int64(time.Hour), []int64{long, inside}, from, until, []int64{from, inside}, 1},
		{"inside", inside, inside + 1, []int64{inside}, inside, inside + 1, []int64{inside}, 0},
		{"no times", 0, 0, []int64{0}, 0, 0, []int64{0}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &profile.Profile{Start: tt.start, End: tt.end}
			for _, at := range tt.times {
				p.Samples = append(p.Samples, profile.Sample{Value: 1, Time: at})
			}
			n, err := checkTimes(&store.Upload{From: from, Until: until, Profile: p}, arrived)
			if err != nil {
				t.Fatal(err)
			}
			if n != tt.wantClamped || p.Start != tt.wantStart || p.End != tt.wantEnd {
				t.Errorf("clamped %d, start %d, end %d; want %d, %d, %d", n, p.Start, p.End, tt.wantClamped, tt.wantStart, tt.wantEnd)
			}
			for i, s := range p.Samples {
				if s.Time != tt.wantTimes[i] {
					t.Errorf("sample %d at %d, want %d", i, s.Time, tt.wantTimes[i])
				}
			}
		})
	}
}
