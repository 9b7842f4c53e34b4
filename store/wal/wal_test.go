package wal

import (
	"bytes"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/sparkprof/sparkprof/profile"
)

// testRecord returns a record of a small profile: two stacks on a thread,
// with labels.
func testRecord() Record {
	p := profile.New()
	cpu := p.AddType(profile.TypeCPU)
	th := p.AddThread(profile.Thread{ID: 1, Name: "Executor task launch worker for task 3.0 in stage 1.0 (TID 7)"})
	ls := p.AddLabels(profile.Labels{{Name: profile.LabelTaskID, Value: "7"}})
	for i, leaf := range []string{"compute", "gc"} {
		var stack []profile.FrameID
		for _, name := range []string{"main", "run", leaf} {
			stack = append(stack, p.AddFrame(profile.Frame{Name: name}))
		}
		p.Add(profile.Sample{Stack: p.AddStack(stack), Type: cpu, Thread: th, Labels: ls, Value: int64(10 * (i + 1)), Time: int64(i + 1)})
	}
	return Record{Header: Header{ID: 7, ReceivedNs: 100, From: 1, Until: 2, Agent: "test", Bytes: 99, Key: "k",
		Labels: profile.Labels{{Name: profile.LabelServiceName, Value: "app"}}}, Profile: p}
}

// TestRecordRoundTrip encodes a record, splits it from a segment's bytes
// and decodes it to the same header and samples.
func TestRecordRoundTrip(t *testing.T) {
	var e Encoder
	in := testRecord()
	rec, err := e.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	payloads, err := Split("segment", bytes.Clone(rec))
	if err != nil || len(payloads) != 1 {
		t.Fatalf("split: %d payloads, %v", len(payloads), err)
	}
	dec, _ := zstd.NewReader(nil)
	defer dec.Close()
	out, err := DecodeAll(payloads, dec)
	if err != nil {
		t.Fatal(err)
	}
	got := out[0]
	if got.ID != in.ID || got.Key != in.Key || got.ReceivedNs != in.ReceivedNs || got.Labels.String() != in.Labels.String() || len(got.Profile.Samples) != len(in.Profile.Samples) {
		t.Errorf("decoded %+v with %d samples, want %+v with %d", got.Header, len(got.Profile.Samples), in.Header, len(in.Profile.Samples))
	}
	rec[len(rec)-1] ^= 0xff
	if _, err := Split("segment", rec); err == nil {
		t.Errorf("a record whose payload changed was split without an error")
	}
}

// FuzzDecodeRecord feeds damaged log records to the record decoder (the
// log's checksum comes first, but the decoder must not rely on it).
func FuzzDecodeRecord(f *testing.F) {
	var e Encoder
	rec, err := e.Encode(testRecord())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(bytes.Clone(rec[8:])) // the payload, after length and checksum
	dec, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(8<<20))
	defer dec.Close()
	f.Fuzz(func(t *testing.T, data []byte) {
		Decode(data, dec)
	})
}
