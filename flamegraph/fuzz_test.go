package flamegraph

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/profile"
)

// FuzzRender renders profiles whose frame names come from the fuzzer
// (";"-separated stack per line) and checks that the SVG stays well-formed
// XML and that the HTML page's data keeps every name intact.
func FuzzRender(f *testing.F) {
	sc := bufio.NewScanner(bytes.NewReader(corpus.Read(f, "jvm-profiler", "phil_stopwatch", "profile_slacker", "CombinedStack.folded.gz")))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		f.Add(sc.Text())
	}
	f.Add("</script><script>window.pwned=1</script>;a&b<$c>\n]]>;\x00\xff")
	f.Fuzz(func(t *testing.T, s string) {
		p := profile.New()
		ti := p.AddType(profile.TypeCPU)
		for i, line := range strings.Split(s, "\n") {
			var ids []profile.FrameID
			for _, name := range strings.Split(line, ";") {
				ids = append(ids, p.AddFrame(profile.Frame{Name: name, Kind: profile.FrameKind(i % 6)}))
			}
			p.Add(profile.Sample{Stack: p.AddStack(ids), Value: int64(i + 1), Type: ti})
		}
		var svg bytes.Buffer
		if err := SVG(&svg, profile.NewTree(p, profile.TypeCPU), Options{}); err != nil {
			t.Fatal(err)
		}
		var doc svgDoc
		if err := xml.Unmarshal(svg.Bytes(), &doc); err != nil {
			t.Fatalf("SVG is not well-formed: %v", err)
		}
		var page bytes.Buffer
		if err := HTML(&page, p, Options{Title: s}); err != nil {
			t.Fatal(err)
		}
		if n := scriptTags(page.String()); n != 2 {
			t.Fatalf("page has %d <script elements, want 2", n)
		}
		d := pageOf(t, page.Bytes())
		names := map[string]bool{}
		for _, f := range p.Frames {
			names[f.Name] = true
		}
		if len(d.Frames) != len(names) {
			t.Fatalf("page has %d frames, profile %d names", len(d.Frames), len(names))
		}
	})
}
