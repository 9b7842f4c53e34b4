package profile

import (
	"hash/maphash"
	"math/bits"
)

// Stacks are matched across profiles by a 64-bit hash of their frames, so
// that merging a profile costs a pass over its tables plus one map lookup
// per sampled stack, instead of a map lookup per stack node. With 64-bit
// hashes a collision among a million distinct stacks has a probability
// below 1e-7; a collision would attribute one stack's samples to another.

var hashSeed = maphash.MakeSeed()

// mix combines a parent hash with a frame hash; the order matters. Frame
// hashes come from maphash and are already uniform, so one multiply and a
// rotation suffice to make the combination depend on position.
func mix(parent, frame uint64) uint64 {
	return bits.RotateLeft64(parent*0x9e3779b97f4a7c15, 29) ^ frame
}

// frameHashes returns a hash per frame of p: of the whole frame when full,
// of its name only otherwise (call trees merge frames by name).
func (p *Profile) frameHashes(full bool, buf []uint64) []uint64 {
	buf = resize(buf, len(p.Frames))
	for i := range p.Frames {
		f := &p.Frames[i]
		h := maphash.String(hashSeed, f.Name)
		if full {
			if f.File != "" {
				h = mix(h, maphash.String(hashSeed, f.File))
			}
			h = mix(h, (uint64(uint32(f.Line))<<8|uint64(f.Kind))*0xc4ceb9fe1a85ec53)
		}
		buf[i] = h
	}
	return buf
}

// stackHashes returns a hash per stack of p from its frames' hashes.
func (p *Profile) stackHashes(frameHash, buf []uint64) []uint64 {
	buf = resize(buf, len(p.stacks))
	buf[0] = 0
	for i := 1; i < len(p.stacks); i++ {
		n := p.stacks[i]
		buf[i] = mix(buf[n.parent], frameHash[n.frame])
	}
	return buf
}

// grow returns s with room for n more elements after its length, as
// slices.Grow does, through make and copy: slices.Grow's append of zeros
// clears the new room in one call the garbage collector cannot preempt,
// and clearing a block's hundreds of megabytes that way kept the
// collector's workers spinning for seconds, where make clears large memory
// in preemptible pieces. Growth is by a quarter at least, so that repeated
// calls stay linear.
func grow[T any](s []T, n int) []T {
	if n <= cap(s)-len(s) {
		return s
	}
	g := make([]T, len(s), max(len(s)+n, cap(s)+cap(s)/4))
	copy(g, s)
	return g
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}
