// Package flamegraph renders call trees as flame graphs.
package flamegraph

import (
	"bufio"
	_ "embed"
	"encoding/xml"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"strings"

	"github.com/sparkprof/sparkprof/profile"
)

// svgScript is the zoom and search script embedded in every SVG.
//
//go:embed assets/svg.js
var svgScript string

// Options control rendering.
type Options struct {
	// Title is shown above the graph; empty means the tree's sample type.
	Title string
	// Type picks the sample type an HTML page shows first, as "name:unit",
	// a name or a family ("cpu", "alloc", ...); empty means the first.
	Type string
	// Width is the image width in pixels; 0 means 1200.
	Width int
	// MinWidth hides frames narrower than this many pixels; 0 means 0.1.
	MinWidth float64
}

// Layout constants, in pixels.
const (
	frameHeight = 16
	pad         = 10
	headerSpace = 3 * frameHeight
	footer      = frameHeight
)

// SVG writes a standalone SVG flame graph of t to w, the root at the
// bottom. An embedded script zooms on click, searches with a regular
// expression (the Search button or Ctrl-F) and shows the matched share.
// Frames are coloured by kind; a diff tree (t.HasBase) is coloured red where
// a frame grew and blue where it shrank, by the change against the baseline
// normalised with t.BaseScale.
func SVG(w io.Writer, t *profile.Tree, opts Options) error {
	if t == nil || t.Root == nil {
		return errors.New("flamegraph: nil tree")
	}
	width := opts.Width
	if width <= 0 {
		width = 1200
	}
	if width <= 2*pad {
		return fmt.Errorf("flamegraph: width %d too small, want more than %d pixels", width, 2*pad)
	}
	minWidth := opts.MinWidth
	if minWidth <= 0 {
		minWidth = 0.1
	}
	title := opts.Title
	if title == "" {
		title = t.Type.String()
	}

	total := t.Root.Total
	if t.HasBase {
		total = max(total, int64(math.Round(float64(t.Root.BaseTotal)*t.BaseScale())))
	}
	perPixel := float64(0)
	if total > 0 {
		perPixel = float64(width-2*pad) / float64(total)
	}

	// First pass: the depth of the deepest visible frame sizes the image.
	depth := 0
	t.Walk(func(n *profile.Node, d int) bool {
		if float64(size(t, n))*perPixel < minWidth {
			return false
		}
		depth = max(depth, d)
		return true
	})
	height := headerSpace + (depth+1)*frameHeight + footer + pad

	bw := bufio.NewWriter(w)
	r := &svgWriter{w: bw, t: t, perPixel: perPixel, minWidth: minWidth, height: height}
	fmt.Fprintf(bw, `<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<svg version="1.1" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" data-width="%d" data-pad="%d">
<style>text{font-family:Verdana,sans-serif;font-size:12px;fill:#000}g.f:hover rect{stroke:#000;stroke-width:0.5}g.f{cursor:pointer}.btn{cursor:pointer;fill:#06c}</style>
<rect x="0" y="0" width="%d" height="%d" fill="#f8f8f8"/>
`, width, height, width, height, width, pad, width, height)
	fmt.Fprintf(bw, `<text x="%d" y="24" text-anchor="middle" style="font-size:17px">%s</text>
<text id="reset" class="btn" x="%d" y="24">Reset Zoom</text>
<text id="search" class="btn" x="%d" y="24" text-anchor="end">Search</text>
<text id="matched" x="%d" y="%d" text-anchor="end"></text>
`, width/2, escape(title), pad, width-pad, width-pad, height-pad/2)
	r.node(t.Root, 0, 0)
	fmt.Fprintf(bw, "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n</svg>\n", svgScript)
	if r.err != nil {
		return r.err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("flamegraph: writing SVG: %w", err)
	}
	return nil
}

// size is the width-bearing value of n: in a diff tree the larger of its
// value and its normalised baseline, so that shrunk frames stay visible.
func size(t *profile.Tree, n *profile.Node) int64 {
	if !t.HasBase {
		return n.Total
	}
	return max(n.Total, int64(math.Round(float64(n.BaseTotal)*t.BaseScale())))
}

type svgWriter struct {
	w        *bufio.Writer
	t        *profile.Tree
	perPixel float64
	minWidth float64
	height   int
	err      error
}

// node writes n at value offset x (in pixels from the left pad) and its
// visible children after it.
func (r *svgWriter) node(n *profile.Node, x float64, depth int) {
	w := float64(size(r.t, n)) * r.perPixel
	if w < r.minWidth {
		return
	}
	y := r.height - footer - pad - (depth+1)*frameHeight
	var b strings.Builder
	b.WriteString(n.Name)
	b.WriteString(" (")
	b.WriteString(r.describe(n))
	b.WriteString(")")
	fill := kindColour(n)
	if r.t.HasBase {
		fill = diffColour(r.t, n)
	}
	name := escape(n.Name)
	_, err := fmt.Fprintf(r.w, `<g class="f" data-name="%s" data-kind="%s" data-depth="%d" data-x0="%.2f" data-x1="%.2f"><title>%s</title><rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s" rx="2"/><text x="%.2f" y="%d">%s</text></g>
`, name, n.Kind, depth, x, x+w, escape(b.String()), pad+x, y, w, frameHeight-1, fill, pad+x+3, y+frameHeight-4, escape(label(n.Name, w)))
	if err != nil && r.err == nil {
		r.err = fmt.Errorf("flamegraph: writing SVG: %w", err)
	}
	for _, c := range n.Children {
		r.node(c, x, depth+1)
		x += float64(size(r.t, c)) * r.perPixel
	}
}

// describe renders n's value, share and, in a diff tree, its change.
func (r *svgWriter) describe(n *profile.Node) string {
	unit := r.t.Type.Unit
	s := fmt.Sprintf("%s, %s", profile.FormatValue(n.Total, unit), percent(n.Total, r.t.Root.Total))
	if r.t.HasBase {
		s += fmt.Sprintf(", before %s, %s", profile.FormatValue(n.BaseTotal, unit), change(r.t, n))
	}
	return s
}

// change renders a node's change against its normalised baseline.
func change(t *profile.Tree, n *profile.Node) string {
	base := float64(n.BaseTotal) * t.BaseScale()
	if base == 0 {
		return "new"
	}
	return fmt.Sprintf("%+.1f%%", 100*(float64(n.Total)-base)/base)
}

func percent(v, total int64) string {
	if total == 0 {
		return "0%"
	}
	return fmt.Sprintf("%.2f%%", 100*float64(v)/float64(total))
}

// label is the part of name that fits in w pixels, at about 7 pixels a
// character, with ".." marking a cut.
func label(name string, w float64) string {
	fit := int((w - 6) / 7)
	if fit < 3 {
		return ""
	}
	r := []rune(name)
	if len(r) <= fit {
		return name
	}
	return string(r[:fit-2]) + ".."
}

// escape escapes s for XML text and attribute values.
func escape(s string) string {
	var b strings.Builder
	// xml.EscapeText writes to a strings.Builder, which never fails.
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// kindColour picks a fill for n: a hue by frame kind, varied by a hash of
// the name so that neighbouring frames differ but a function keeps its
// colour across renders.
func kindColour(n *profile.Node) string {
	h := fnv.New32a()
	h.Write([]byte(n.Name))
	v := float64(h.Sum32()%1000) / 1000
	switch n.Kind {
	case profile.KindJava:
		return rgb(50+int(60*v), 180+int(50*v), 50+int(40*v)) // green
	case profile.KindNative:
		return rgb(230+int(25*v), 140+int(60*v), 40+int(30*v)) // orange
	case profile.KindKernel:
		return rgb(210+int(40*v), 70+int(50*v), 50+int(30*v)) // red
	case profile.KindPython:
		return rgb(70+int(50*v), 140+int(50*v), 220+int(35*v)) // blue
	}
	return rgb(180+int(40*v), 180+int(40*v), 170+int(30*v)) // grey
}

// diffColour is red for a frame that grew and blue for one that shrank
// against the normalised baseline, more saturated the larger the change
// relative to the frame; white when unchanged.
func diffColour(t *profile.Tree, n *profile.Node) string {
	base := float64(n.BaseTotal) * t.BaseScale()
	cur := float64(n.Total)
	d := cur - base
	if m := max(cur, base); m > 0 {
		d /= m
	}
	c := 255 - int(math.Round(200*math.Abs(d)))
	switch {
	case d > 0:
		return rgb(255, c, c)
	case d < 0:
		return rgb(c, c, 255)
	}
	return rgb(255, 255, 255)
}

func rgb(r, g, b int) string { return fmt.Sprintf("rgb(%d,%d,%d)", r, g, b) }
