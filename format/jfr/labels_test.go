package jfr

import (
	"fmt"
	"strings"
	"testing"

	"github.com/grafana/jfr-parser/pprof"
	"google.golang.org/protobuf/encoding/protowire"
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

// snapshotOf encodes a LabelsSnapshot of one context, id 1, with the
// labels pairs gives (name and value string ids, in order, repeats kept
// as a protobuf map's entries may repeat), and the strings "s<id>".
func snapshotOf(pairs [][2]uint64) []byte {
	var ctx, b []byte
	ids := map[uint64]bool{}
	for _, p := range pairs {
		var e []byte
		e = protowire.AppendTag(e, entryKey, protowire.VarintType)
		e = protowire.AppendVarint(e, p[0])
		e = protowire.AppendTag(e, entryValue, protowire.VarintType)
		e = protowire.AppendVarint(e, p[1])
		ctx = protowire.AppendTag(ctx, contextLabels, protowire.BytesType)
		ctx = protowire.AppendBytes(ctx, e)
		ids[p[0]], ids[p[1]] = true, true
	}
	var e []byte
	e = protowire.AppendTag(e, entryKey, protowire.VarintType)
	e = protowire.AppendVarint(e, 1)
	e = protowire.AppendTag(e, entryValue, protowire.BytesType)
	e = protowire.AppendBytes(e, ctx)
	b = protowire.AppendTag(b, snapshotContexts, protowire.BytesType)
	b = protowire.AppendBytes(b, e)
	for id := range ids {
		var e []byte
		e = protowire.AppendTag(e, entryKey, protowire.VarintType)
		e = protowire.AppendVarint(e, id)
		e = protowire.AppendTag(e, entryValue, protowire.BytesType)
		e = protowire.AppendString(e, fmt.Sprintf("s%d", id))
		b = protowire.AppendTag(b, snapshotStrings, protowire.BytesType)
		b = protowire.AppendBytes(b, e)
	}
	return b
}

// A context of many labels, some names repeated, keeps each name's last
// value, as the protobuf decoder does; one of more labels than a context
// holds is refused, rather than decoded at a cost that grew with the
// square of its labels (B7: four uploads of a 4.6 MB context held every
// decoding turn for 46 s).
func TestContextLabels(t *testing.T) {
	var pairs [][2]uint64
	for i := range uint64(200) {
		pairs = append(pairs, [2]uint64{1000 + i%60, 2000 + i})
	}
	checkSnapshot(t, snapshotOf(pairs))
	s, err := parseSnapshot(snapshotOf(pairs))
	if err != nil {
		t.Fatal(err)
	}
	var buf profile.Labels
	if ls := s.labels(1, &buf); len(ls) != 60 || ls[0] != (profile.Label{Name: "s1000", Value: "s2180"}) {
		t.Errorf("200 labels of 60 names: %d labels, the first %v; want 60, the first s1000=s2180", len(ls), ls[0])
	}

	pairs = pairs[:0]
	for i := range uint64(100_000) {
		pairs = append(pairs, [2]uint64{1 + i, 1})
	}
	if _, err := parseSnapshot(snapshotOf(pairs)); err == nil || !strings.Contains(err.Error(), "more than 256 labels") {
		t.Errorf("a context of 100,000 labels: %v, want refused for more than 256 labels", err)
	}
}
