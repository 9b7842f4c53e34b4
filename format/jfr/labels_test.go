package jfr

import (
	"testing"

	"github.com/grafana/jfr-parser/pprof"
	"google.golang.org/protobuf/proto"

	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/profile"
)

// checkSnapshot checks that parseSnapshot reads b as the protobuf
// module's decoder reads a LabelsSnapshot, when both read it; where one
// refuses it, parseSnapshot must still not panic (it is the stricter of
// the two on cut fields inside map entries). The reference is not the
// message's generated UnmarshalVT, which reads a map entry's key as a
// varint whatever its wire type says.
func checkSnapshot(t *testing.T, b []byte) {
	want := new(pprof.LabelsSnapshot)
	wantErr := proto.Unmarshal(b, want)
	got, err := parseSnapshot(b)
	if wantErr != nil || err != nil {
		return
	}
	var buf profile.Labels
	for ctx, c := range want.Contexts {
		ls := got.labels(uint64(ctx), &buf)
		wantLabels := profile.Labels{}
		names := map[string]bool{}
		ambiguous := false // two name ids of one string: which label is kept is not defined
		for k, v := range c.GetLabels() {
			ambiguous = ambiguous || names[want.Strings[k]]
			names[want.Strings[k]] = true
			if want.Strings[v] != "" {
				wantLabels = append(wantLabels, profile.Label{Name: want.Strings[k], Value: want.Strings[v]})
			}
		}
		if ambiguous {
			continue
		}
		if a, b := ls.Normalize().String(), wantLabels.Normalize().String(); a != b {
			t.Fatalf("context %d: %s, want %s", ctx, a, b)
		}
	}
}

func TestParseSnapshot(t *testing.T) {
	for _, name := range []string{"dump1.labels.pb.gz", "dump2.labels.pb.gz"} {
		t.Run(name, func(t *testing.T) {
			b := corpus.Read(t, "jfr", name)
			if _, err := parseSnapshot(b); err != nil {
				t.Fatal(err)
			}
			checkSnapshot(t, b)
		})
	}
	if _, err := parseSnapshot([]byte{0x0a, 0xff}); err == nil {
		t.Error("a cut field parsed")
	}
}

func FuzzParseSnapshot(f *testing.F) {
	for _, name := range []string{"dump1.labels.pb.gz", "dump2.labels.pb.gz"} {
		f.Add(corpus.Read(f, "jfr", name))
	}
	f.Fuzz(checkSnapshot)
}
