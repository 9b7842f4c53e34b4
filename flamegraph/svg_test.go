package flamegraph

import (
	"bytes"
	"encoding/xml"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/profile"
)

// build returns a profile of one sample type from folded-style stacks
// ("a;b;c" → value); frame kinds come from kinds, java by default.
func build(t testing.TB, typ profile.SampleType, stacks map[string]int64, kinds map[string]profile.FrameKind) *profile.Profile {
	t.Helper()
	p := profile.New()
	ti := p.AddType(typ)
	for s, v := range stacks {
		var ids []profile.FrameID
		for _, name := range strings.Split(s, ";") {
			k, ok := kinds[name]
			if !ok {
				k = profile.KindJava
			}
			ids = append(ids, p.AddFrame(profile.Frame{Name: name, Kind: k}))
		}
		p.Add(profile.Sample{Stack: p.AddStack(ids), Value: v, Type: ti})
	}
	return p
}

// svgFrame is one <g class="f"> element of a rendered SVG.
type svgFrame struct {
	Class string  `xml:"class,attr"`
	Name  string  `xml:"data-name,attr"`
	Kind  string  `xml:"data-kind,attr"`
	Depth int     `xml:"data-depth,attr"`
	Title string  `xml:"title"`
	Rect  svgRect `xml:"rect"`
	Text  string  `xml:"text"`
}

type svgRect struct {
	X     float64 `xml:"x,attr"`
	Y     float64 `xml:"y,attr"`
	Width float64 `xml:"width,attr"`
	Fill  string  `xml:"fill,attr"`
}

type svgDoc struct {
	XMLName xml.Name   `xml:"svg"`
	Width   int        `xml:"width,attr"`
	Frames  []svgFrame `xml:"g"`
	Texts   []string   `xml:"text"`
	Script  string     `xml:"script"`
}

func render(t *testing.T, tr *profile.Tree, opts Options) (svgDoc, string) {
	t.Helper()
	var buf bytes.Buffer
	if err := SVG(&buf, tr, opts); err != nil {
		t.Fatalf("SVG: %v", err)
	}
	var doc svgDoc
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("SVG is not well-formed XML: %v\n%s", err, buf.String())
	}
	return doc, buf.String()
}

func byName(doc svgDoc) map[string]svgFrame {
	m := map[string]svgFrame{}
	for _, f := range doc.Frames {
		m[f.Name] = f
	}
	return m
}

func TestSVGStructure(t *testing.T) {
	stacks := map[string]int64{
		"main;run;compute":   600,
		"main;run;io":        200,
		"main;gc":            100,
		"main;run;compute;x": 100,
	}
	kinds := map[string]profile.FrameKind{"gc": profile.KindNative, "io": profile.KindKernel, "x": profile.KindPython}
	tr := profile.NewTree(build(t, profile.TypeCPU, stacks, kinds), profile.TypeCPU)
	doc, _ := render(t, tr, Options{Width: 1020, Title: "cpu of app"})

	if got, want := len(doc.Frames), 7; got != want { // total main run compute x io gc
		t.Fatalf("got %d frames, want %d", got, want)
	}
	frames := byName(doc)
	// 1000 pixels for 1000 ns: each frame's width equals its total.
	tests := []struct {
		name  string
		width float64
		depth int
		kind  string
	}{
		{"total", 1000, 0, "unknown"},
		{"main", 1000, 1, "java"},
		{"run", 900, 2, "java"},
		{"compute", 700, 3, "java"},
		{"x", 100, 4, "python"},
		{"io", 200, 3, "kernel"},
		{"gc", 100, 2, "native"},
	}
	for _, tt := range tests {
		f, ok := frames[tt.name]
		if !ok {
			t.Errorf("frame %q missing", tt.name)
			continue
		}
		if math.Abs(f.Rect.Width-tt.width) > 0.01 {
			t.Errorf("%s: width %.2f, want %.2f", tt.name, f.Rect.Width, tt.width)
		}
		if f.Depth != tt.depth || f.Kind != tt.kind {
			t.Errorf("%s: depth %d kind %s, want %d %s", tt.name, f.Depth, f.Kind, tt.depth, tt.kind)
		}
	}
	// Children sit side by side inside their parent, above it.
	if frames["compute"].Rect.X != frames["run"].Rect.X || frames["io"].Rect.X != frames["compute"].Rect.X+700 {
		t.Errorf("children not laid out left to right: compute x=%v io x=%v run x=%v",
			frames["compute"].Rect.X, frames["io"].Rect.X, frames["run"].Rect.X)
	}
	if frames["run"].Rect.Y >= frames["main"].Rect.Y {
		t.Errorf("child run at y=%v not above parent main at y=%v", frames["run"].Rect.Y, frames["main"].Rect.Y)
	}
	if !strings.Contains(frames["compute"].Title, "700 ns, 70.00%") {
		t.Errorf("compute tooltip %q lacks value and share", frames["compute"].Title)
	}
	if doc.Texts[0] != "cpu of app" {
		t.Errorf("title %q", doc.Texts[0])
	}
	if !strings.Contains(doc.Script, "function zoom") {
		t.Error("zoom script missing")
	}
	// Kinds have distinct hue families.
	green := regexp.MustCompile(`rgb\((\d+),(\d+),(\d+)\)`)
	m := green.FindStringSubmatch(frames["main"].Rect.Fill)
	r, _ := strconv.Atoi(m[1])
	g, _ := strconv.Atoi(m[2])
	if g <= r {
		t.Errorf("java frame fill %s is not green", frames["main"].Rect.Fill)
	}
}

func TestSVGMinWidthHidesNarrowFrames(t *testing.T) {
	stacks := map[string]int64{"a;big": 100000, "a;tiny": 1}
	tr := profile.NewTree(build(t, profile.TypeSamples, stacks, nil), profile.TypeSamples)
	doc, _ := render(t, tr, Options{Width: 1020, MinWidth: 1})
	if _, ok := byName(doc)["tiny"]; ok {
		t.Error("frame narrower than MinWidth drawn")
	}
	if _, ok := byName(doc)["big"]; !ok {
		t.Error("frame big missing")
	}
}

func TestSVGDiffColours(t *testing.T) {
	base := build(t, profile.TypeCPU, map[string]int64{"m;grew": 100, "m;shrank": 300, "m;same": 200, "m;gone": 100}, nil)
	// Twice the total: values are compared after scaling the base by 2.
	next := build(t, profile.TypeCPU, map[string]int64{"m;grew": 600, "m;shrank": 200, "m;same": 400, "m;new": 200}, nil)
	tr := profile.Diff(base, next, profile.TypeCPU)
	doc, _ := render(t, tr, Options{Width: 1020})
	frames := byName(doc)
	parse := func(name string) (r, g, b int) {
		f, ok := frames[name]
		if !ok {
			t.Fatalf("frame %q missing", name)
		}
		m := regexp.MustCompile(`^rgb\((\d+),(\d+),(\d+)\)$`).FindStringSubmatch(f.Rect.Fill)
		if m == nil {
			t.Fatalf("%s: fill %q", name, f.Rect.Fill)
		}
		r, _ = strconv.Atoi(m[1])
		g, _ = strconv.Atoi(m[2])
		b, _ = strconv.Atoi(m[3])
		return
	}
	tests := []struct {
		name string
		want string // red, blue or white
	}{
		{"grew", "red"}, {"new", "red"}, {"shrank", "blue"}, {"gone", "blue"}, {"same", "white"}, {"m", "white"},
	}
	for _, tt := range tests {
		r, g, b := parse(tt.name)
		var got string
		switch {
		case r == 255 && g == 255 && b == 255:
			got = "white"
		case r == 255 && g < 255 && g == b:
			got = "red"
		case b == 255 && r < 255 && r == g:
			got = "blue"
		}
		if got != tt.want {
			t.Errorf("%s: fill rgb(%d,%d,%d), want %s", tt.name, r, g, b, tt.want)
		}
	}
	// A frame that vanished stays visible at its normalised baseline width:
	// base total 700 scaled to 1400, gone = 100*2 = 200 of 1400 → 1000*200/1400.
	if w := frames["gone"].Rect.Width; math.Abs(w-1000*200.0/1400) > 0.01 {
		t.Errorf("gone width %.2f", w)
	}
	// grew: 600 against 100*2 → +200%.
	if title := frames["grew"].Title; !strings.Contains(title, "+200.0%") {
		t.Errorf("grew tooltip %q lacks the change", title)
	}
	if title := frames["new"].Title; !strings.Contains(title, "new") {
		t.Errorf("new tooltip %q", title)
	}
}

func TestSVGEscapesNames(t *testing.T) {
	evil := `</script><script>window.pwned=1</script>`
	names := []string{evil, `a&b<c>"d'$e`, `]]>`}
	stacks := map[string]int64{}
	for _, n := range names {
		stacks["root;"+n] = 10
	}
	tr := profile.NewTree(build(t, profile.TypeCPU, stacks, nil), profile.TypeCPU)
	doc, raw := render(t, tr, Options{Title: evil})
	frames := byName(doc)
	for _, n := range names {
		if _, ok := frames[n]; !ok {
			t.Errorf("name %q did not round-trip through XML", n)
		}
	}
	if strings.Count(raw, "<script") != 1 {
		t.Errorf("found %d <script elements, want only the embedded one", strings.Count(raw, "<script"))
	}
	if !strings.Contains(doc.Script, "function zoom") {
		t.Error("embedded script was altered")
	}
}

func TestSVGErrors(t *testing.T) {
	tests := []struct {
		name string
		tree *profile.Tree
		opts Options
		want string
	}{
		{"nil tree", nil, Options{}, "nil tree"},
		{"narrow", profile.NewTree(profile.New(), profile.TypeCPU), Options{Width: 5}, "width 5 too small"},
	}
	for _, tt := range tests {
		err := SVG(&bytes.Buffer{}, tt.tree, tt.opts)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestSVGEmptyTree(t *testing.T) {
	doc, _ := render(t, profile.NewTree(profile.New(), profile.TypeCPU), Options{})
	if len(doc.Frames) != 0 {
		t.Errorf("empty tree drew %d frames", len(doc.Frames))
	}
}
