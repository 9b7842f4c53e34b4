package jfr

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// appendVarint appends v as a JFR compressed integer: seven bits per byte,
// the ninth byte holding eight.
func appendVarint(b []byte, v uint64) []byte {
	for i := 0; i < 8; i++ {
		if v < 0x80 {
			return append(b, byte(v))
		}
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func TestVarint(t *testing.T) {
	values := []uint64{0, 1, 0x7f, 0x80, 0x3fff, 0x4000, 1<<21 - 1, 1 << 21, 1<<49 - 1, 1 << 49, 1<<56 - 1, 1 << 56, math.MaxUint64}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		values = append(values, rng.Uint64()>>rng.IntN(64))
	}
	var b []byte
	for _, v := range values {
		b = appendVarint(b, v)
	}
	r := reader{b: b}
	for i, want := range values {
		if got := r.varint(); got != want || r.err != nil {
			t.Fatalf("integer %d: got %d (%v), want %d", i, got, r.err, want)
		}
	}
	if r.pos != len(b) {
		t.Errorf("read %d of %d bytes", r.pos, len(b))
	}
	// The same through varintFields, which reads short integers in place.
	r = reader{b: b}
	var rec record
	roles := []role{roleNone, roleMethod, roleLineNumber}
	for i := 0; i < len(values); i += len(roles) {
		n := min(len(roles), len(values)-i)
		r.varintFields(&rec, roles[:n])
		for j, ro := range roles[:n] {
			if got, want := rec.v[ro], values[i+j]; got != want || r.err != nil {
				t.Fatalf("varintFields, integer %d: got %d (%v), want %d", i+j, got, r.err, want)
			}
		}
	}
	// Every integer at the very end of the data, and cut short.
	for _, v := range values[:13] {
		enc := appendVarint(nil, v)
		for cut := 0; cut <= len(enc); cut++ {
			r := reader{b: append(make([]byte, 3), enc[:cut]...), pos: 3}
			got := r.varint()
			switch {
			case cut == len(enc) && (got != v || r.err != nil):
				t.Errorf("%d at the end: got %d (%v)", v, got, r.err)
			case cut < len(enc) && !errors.Is(r.err, errShort):
				t.Errorf("%d cut to %d of %d bytes: got %d, error %v; want errShort", v, cut, len(enc), got, r.err)
			}
		}
	}
}
