package server

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

// newFlamebearer lays a call tree out as a flamebearer, children in the
// tree's order (sorted by name).
func newFlamebearer(t *profile.Tree) *Flamebearer {
	fb := &Flamebearer{NumTicks: t.Root.Total}
	index := map[string]int64{}
	name := func(n string) int64 {
		i, ok := index[n]
		if !ok {
			i = int64(len(fb.Names))
			index[n] = i
			fb.Names = append(fb.Names, n)
		}
		return i
	}
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
