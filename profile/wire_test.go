package profile

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"testing"
)

// The column writers must write what encoding/binary writes: the decoder
// reads with it.
func TestPutVarint(t *testing.T) {
	for _, x := range []int64{0, 1, -1, 63, -64, 64, 127, 128, -129, 1 << 20, -1 << 40, math.MaxInt64, math.MinInt64} {
		b := make([]byte, 2*binary.MaxVarintLen64)
		n := putVarint(b, 0, x)
		n = putUvarint(b, n, uint64(x))
		want := binary.AppendUvarint(binary.AppendVarint(nil, x), uint64(x))
		if !bytes.Equal(b[:n], want) {
			t.Errorf("%d: wrote % x, want % x", x, b[:n], want)
		}
	}
}

// roundTrip returns p encoded and decoded again.
func roundTrip(t *testing.T, p *Profile) *Profile {
	t.Helper()
	data, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var q Profile
	if err := q.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	return &q
}

func TestWireRoundTrip(t *testing.T) {
	for _, p := range synthetic(3, 200, 50) {
		p.AddLabels(Labels{{LabelStageID, "7"}})
		p.Series = []Series{{Name: "cpu", Unit: "ratio", Points: []Point{{1, 0.5}}}}
		q := roundTrip(t, p)
		a, b := treeLines(NewTree(p, TypeCPU)), treeLines(NewTree(q, TypeCPU))
		if strings.Join(a, "\n") != strings.Join(b, "\n") || len(q.Samples) != len(p.Samples) {
			t.Fatalf("round trip changed the profile")
		}
		for i := range p.Samples {
			if p.Samples[i] != q.Samples[i] || p.SampleLabels(p.Samples[i]).String() != q.SampleLabels(q.Samples[i]).String() {
				t.Fatalf("sample %d: %+v vs %+v", i, p.Samples[i], q.Samples[i])
			}
		}
		// The restored profile keeps interning.
		if id := q.AddLabels(Labels{{LabelStageID, "7"}}); int(id) >= len(q.labelSets) {
			t.Fatal("label set not found after restore")
		}
		if q.Series[0].Points[0].Value != 0.5 || q.Labels.String() != p.Labels.String() {
			t.Errorf("series or labels lost")
		}
	}
}

func FuzzUnmarshalBinary(f *testing.F) {
	p := synthetic(1, 20, 10)[0]
	data, _ := p.MarshalBinary()
	f.Add(data)
	f.Fuzz(func(t *testing.T, data []byte) {
		var q Profile
		if q.UnmarshalBinary(data) == nil {
			NewTree(&q, TypeCPU)
		}
	})
}

// TestWireTruncated cuts an encoded profile at every length: each cut is
// an error naming its offset, never a panic or a silent success.
func TestWireTruncated(t *testing.T) {
	p := synthetic(1, 30, 10)[0]
	p.Series = []Series{{Name: "heap", Unit: "bytes", Points: []Point{{1, 2}, {3, 4}}}}
	data, _ := p.MarshalBinary()
	for n := len(columnsMagic); n < len(data); n++ {
		var q Profile
		err := q.UnmarshalBinary(data[:n])
		if err == nil || !strings.Contains(err.Error(), "offset") {
			t.Fatalf("cut at %d of %d: %v", n, len(data), err)
		}
	}
}

// TestWithSamples stores samples apart from their tables and reads them
// back into a copy of the tables; samples whose ids the tables lack, and
// data cut short, are errors.
func TestWithSamples(t *testing.T) {
	p := synthetic(1, 200, 50)[0]
	tables := *p
	tables.Samples = nil
	data := AppendSamples([]byte("prefix"), p.Samples[50:120])
	q, err := tables.WithSamples(data[len("prefix"):])
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Samples) != 70 || tables.Samples != nil {
		t.Fatalf("%d samples read, the tables hold %d", len(q.Samples), len(tables.Samples))
	}
	for i, s := range q.Samples {
		if s != p.Samples[50+i] {
			t.Fatalf("sample %d: %+v, want %+v", i, s, p.Samples[50+i])
		}
	}
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"cut short", data[len("prefix") : len(data)-3], "offset"},
		{"not samples", []byte("SPPC\x01"), "no"},
		{"ids past the tables", AppendSamples(nil, []Sample{{Stack: StackID(len(p.stacks))}}), "out of range"},
		// A stack id of eleven bytes, then the other columns of one sample.
		{"a varint too long", append([]byte(samplesMagic+"\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x00"), 0, 0, 0, 0, 0, 0), "offset"},
	} {
		if _, err := tables.WithSamples(c.data); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}

// TestWireLabelSets round-trips label sets that share strings with the set
// before them in the same place, in another place, or not at all, with
// an empty set and an empty name between them: each set decodes to itself,
// and appending to one leaves the others as they were.
func TestWireLabelSets(t *testing.T) {
	sets := []Labels{
		{{"a", "1"}, {"b", "2"}},
		{{"a", "1"}, {"b", "3"}},             // a value differs
		{{"a", "1"}},                         // shorter
		{},                                   // empty, between two
		{{"a", "1"}, {"b", "3"}, {"c", "4"}}, // after an empty set
		{{"b", "1"}, {"c", "a"}},             // the strings, in other places
		{{"", "x"}},                          // an empty name
		{{"a", "1"}, {"b", "2"}},             // the first again, not next to it
	}
	p := New()
	for _, ls := range sets {
		p.AppendLabels(ls)
	}
	q := roundTrip(t, p)
	if q.NumLabelSets() != len(sets)+1 {
		t.Fatalf("%d label sets, want %d", q.NumLabelSets()-1, len(sets))
	}
	for i, want := range sets {
		if got := q.LabelSet(LabelSetID(i + 1)); got.String() != want.String() || len(got) != len(want) {
			t.Errorf("set %d: %v, want %v", i+1, got, want)
		}
	}
	grown := append(q.LabelSet(1), Label{"z", "9"})
	if got := q.LabelSet(2); got.String() != sets[1].String() || len(grown) != 3 {
		t.Errorf("appending to set 1 changed set 2: %v", got)
	}
}

// TestSampleColumns round-trips sample columns whose varints take from one
// to ten bytes, over counts on both sides of the runs samples are filled in.
func TestSampleColumns(t *testing.T) {
	p := synthetic(1, 50, 10)[0]
	tables := *p
	tables.Samples = nil
	for _, n := range []int{0, 1, 7, 255, 256, 257, 600} {
		in := make([]Sample, n)
		for i := range in {
			s := p.Samples[i%len(p.Samples)]
			s.Value = int64(1) << (7 * (i % 10)) * int64(1-2*(i%2)) // 1 to 10 bytes, either sign
			s.Time = int64(i%13) << (5 * (i % 12))
			in[i] = s
		}
		q, err := tables.WithSamples(AppendSamples(nil, in))
		if err != nil {
			t.Fatalf("%d samples: %v", n, err)
		}
		if !slices.Equal(q.Samples, in) {
			t.Errorf("%d samples changed in the round trip", n)
		}
	}
}

// uvarintAt reads what binary.Uvarint reads, wherever the varint ends
// relative to the end of the data, and fails where it fails.
func TestUvarintAt(t *testing.T) {
	var values []uint64
	for k := range 64 {
		values = append(values, 1<<k, 1<<k-1, 1<<k+1)
	}
	values = append(values, math.MaxUint64)
	for _, v := range values {
		enc := binary.AppendUvarint(nil, v)
		for pad := range 10 { // bytes after the varint
			b := append(append([]byte{0x80}, enc...), make([]byte, pad)...)
			got, next := uvarintAt(b, 1)
			if got != v || next != 1+len(enc) {
				t.Fatalf("%d with %d bytes after: %d at %d, want %d at %d", v, pad, got, next, v, 1+len(enc))
			}
		}
	}
	for _, b := range [][]byte{{0x80}, {0xff, 0xff}, bytes.Repeat([]byte{0xff}, 11), append(bytes.Repeat([]byte{0xff}, 9), 0x02), append(bytes.Repeat([]byte{0xff}, 9), 0x01)} {
		_, next := uvarintAt(b, 0)
		if _, k := binary.Uvarint(b); (next < 0) != (k <= 0) {
			t.Errorf("% x: read to %d, binary.Uvarint %d", b, next, k)
		}
	}
}
