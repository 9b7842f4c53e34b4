package query

import "github.com/sparkprof/sparkprof/profile"

// Flamebearer is the compact flame graph format Pyroscope's UI and API use:
// each level is a flat list of 4-number blocks [x offset from the previous
// block's end, total, self, name index], root first. The UI decodes it the
// same way, and Pyroscope-compatible tools read it from /pyroscope/render.
type Flamebearer struct {
	Names    []string  `json:"names"`
	Levels   [][]int64 `json:"levels"`
	NumTicks int64     `json:"numTicks"`
	MaxSelf  int64     `json:"maxSelf"`
}

// nameIndex returns a function giving a frame name's index in fb.Names,
// adding it on first use.
func (fb *Flamebearer) nameIndex() func(string) int64 {
	index := map[string]int64{}
	return func(n string) int64 {
		i, ok := index[n]
		if !ok {
			i = int64(len(fb.Names))
			index[n] = i
			fb.Names = append(fb.Names, n)
		}
		return i
	}
}

// NewFlamebearer lays a call tree out as a flamebearer, children in the
// tree's order (sorted by name).
func NewFlamebearer(t *profile.Tree) *Flamebearer {
	fb := &Flamebearer{NumTicks: t.Root.Total}
	name := fb.nameIndex()
	type placed struct {
		n *profile.Node
		x int64
	}
	level := []placed{{t.Root, 0}}
	for len(level) > 0 {
		var row []int64
		var next []placed
		end := int64(0)
		for _, p := range level {
			row = append(row, p.x-end, p.n.Total, p.n.Self, name(p.n.Name))
			end = p.x + p.n.Total
			fb.MaxSelf = max(fb.MaxSelf, p.n.Self)
			x := p.x
			for _, c := range p.n.Children {
				if c.Total > 0 {
					next = append(next, placed{c, x})
				}
				x += c.Total
			}
		}
		fb.Levels = append(fb.Levels, row)
		level = next
	}
	return fb
}

// NewDiffFlamebearer lays out a diff tree in Pyroscope's diff format: each
// block has seven numbers [left x offset, left total, left self, right x
// offset, right total, right self, name index], left being the baseline
// and right the new profile, each in its own values (as Pyroscope's: its
// flame graph compares each side's share of its own total, leftTicks and
// rightTicks), and NumTicks their sum.
func NewDiffFlamebearer(t *profile.Tree) *Flamebearer {
	fb := &Flamebearer{NumTicks: t.Root.Total + t.Root.BaseTotal}
	name := fb.nameIndex()
	type placed struct {
		n      *profile.Node
		lx, rx int64
	}
	level := []placed{{t.Root, 0, 0}}
	for len(level) > 0 {
		var row []int64
		var next []placed
		var lend, rend int64
		for _, p := range level {
			lt, ls := p.n.BaseTotal, p.n.BaseSelf
			row = append(row, p.lx-lend, lt, ls, p.rx-rend, p.n.Total, p.n.Self, name(p.n.Name))
			lend, rend = p.lx+lt, p.rx+p.n.Total
			fb.MaxSelf = max(fb.MaxSelf, p.n.Self, ls)
			lx, rx := p.lx, p.rx
			for _, c := range p.n.Children {
				if c.Total > 0 || c.BaseTotal > 0 {
					next = append(next, placed{c, lx, rx})
				}
				lx += c.BaseTotal
				rx += c.Total
			}
		}
		fb.Levels = append(fb.Levels, row)
		level = next
	}
	return fb
}
