package flamegraph

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sparkprof/sparkprof/internal/browsertest"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/profile"
)

// load opens page from a file:// URL and waits for the flame graph.
func load(t *testing.T, ctx context.Context, page []byte) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(writePageFile(t, page)), chromedp.WaitReady(`[data-testid="flamegraph-canvas"][data-frames]`)); err != nil {
		t.Fatalf("loading page: %v", err)
	}
}

func screenshot(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100 gives PNG
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
}

// wait lets events already sent by the page reach the listener.
func wait(ctx context.Context) {
	_, _ = chromedp.Run(ctx, chromedp.Evaluate[int](`1`))
}

// writePageFile writes page to a file and returns its file:// URL.
func writePageFile(t *testing.T, page []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "flame.html")
	if err := os.WriteFile(path, page, 0o644); err != nil {
		t.Fatal(err)
	}
	return "file://" + path
}

// drawnPixels counts pixels of the flame graph's canvas that are not
// transparent.
const drawnPixels = `(() => {
  const c = document.querySelector('[data-testid="flamegraph-canvas"]');
  const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 3; i < d.length; i += 4) if (d[i] !== 0) n++;
  return n;
})()`

// set gives a form control a value as a user would, so that the page's
// React components see the change; it is defined in the page by helpers.
const helpers = `window.set = (sel, v) => {
  const el = document.querySelector(sel);
  Object.getOwnPropertyDescriptor(Object.getPrototypeOf(el), "value").set.call(el, v);
  el.dispatchEvent(new Event(el.tagName === "SELECT" ? "change" : "input", { bubbles: true }));
};
window.graph = () => document.querySelector('[data-testid="flamegraph"]').dataset;
true`

func TestBrowserHTML(t *testing.T) {
	ctx, problems := browsertest.Start(t)
	p := labelled(t)
	var buf bytes.Buffer
	if err := HTML(&buf, p, Options{Title: "<script>alert('XSS')</script>"}); err != nil {
		t.Fatal(err)
	}
	load(t, ctx, buf.Bytes())
	browsertest.Eval[bool](t, ctx, helpers)
	pixels := browsertest.Eval[int](t, ctx, drawnPixels)
	total := browsertest.Eval[string](t, ctx, `graph().total`)
	title := browsertest.Eval[string](t, ctx, `document.getElementById("title").textContent`)
	browsertest.Eval[bool](t, ctx, `set('[data-testid="flame-search"]', "Shuffle"), true`)
	browsertest.Until(t, ctx, `graph().matched === "40"`)
	matched := browsertest.Eval[string](t, ctx, `document.querySelector('[data-testid="flame-matched"]').textContent`)
	browsertest.Eval[bool](t, ctx, `set('[data-testid="flame-search"]', ""), true`)
	screenshot(t, ctx, filepath.Join(t.TempDir(), "labelled.png"))
	crumbs := browsertest.Eval[int](t, ctx, `document.querySelectorAll('[data-testid="flame-crumbs"] a').length`)
	// Task.run is on the third row (total, Thread.run, Task.run), right of GC.collect.
	browsertest.Eval[bool](t, ctx, `(() => { const c = document.querySelector('[data-testid="flamegraph-canvas"]'), b = c.getBoundingClientRect();
		c.dispatchEvent(new MouseEvent("click", {clientX: b.left + b.width / 2, clientY: b.top + 18*2 + 5, bubbles: true}));
		return true })()`)
	browsertest.Until(t, ctx, `document.querySelectorAll('[data-testid="flame-crumbs"] a').length === 3`)
	zoomed := browsertest.Eval[string](t, ctx, `graph().viewTotal`)
	// Sandwich: pick Task.run in the function table, then the sandwich view.
	browsertest.Eval[bool](t, ctx, `(() => {
		const row = [...document.querySelectorAll('[data-testid="table-view"] tbody tr')].find(r => r.cells[0] && r.cells[0].textContent === "Task.run");
		row.click();
		return true })()`)
	browsertest.Eval[bool](t, ctx, `set('[data-testid="flame-view"]', "sandwich"), true`)
	browsertest.Until(t, ctx, `!!document.querySelector('[data-testid="sandwich"]')`)
	sandwich := browsertest.Eval[string](t, ctx, `(() => { const s = document.querySelector('[data-testid="sandwich"]').dataset;
		return s.callersTotal + " " + s.calleesTotal })()`)
	browsertest.Eval[bool](t, ctx, `set('[data-testid="flame-view"]', "both"), set("#pool", "`+poolIndex(t, p, "gc")+`"), true`)
	browsertest.Until(t, ctx, `graph().total === "5"`)
	wait(ctx)
	if p := problems(); len(p) > 0 {
		t.Errorf("page reported problems: %q", p)
	}
	if pixels == 0 {
		t.Error("canvas is blank")
	}
	if title != "<script>alert('XSS')</script>" {
		t.Errorf("title shown as %q", title)
	}
	if total != "75" { // cpu: 10*3 + 20*2 + 5
		t.Errorf("total %s, want 75", total)
	}
	// 40 of 75, in the type's unit (nanoseconds)
	if !strings.Contains(matched, "Matched: 40 ns, 53.3 % of the total") {
		t.Errorf("search: %q", matched)
	}
	if crumbs != 1 || zoomed != "70" {
		t.Errorf("crumbs before zoom %d, zoomed frame's total %s, want 1 and 70 (Task.run)", crumbs, zoomed)
	}
	if want := "70 70"; sandwich != want { // Task.run: 10*3 + 20*2 of 75
		t.Errorf("sandwich callers and callees of Task.run: %q, want %q", sandwich, want)
	}
}

// poolIndex returns the option value of thread pool name in p's page.
func poolIndex(t *testing.T, p *profile.Profile, name string) string {
	e := newEncoder()
	e.add(p)
	for i, v := range e.d.Pools {
		if v == name {
			return strconv.Itoa(i)
		}
	}
	t.Fatalf("no pool %q", name)
	return ""
}

// foldedProfile reads folded stacks ("a;b;c 12" lines) into a profile of
// sample counts; a test helper, not a decoder.
func foldedProfile(t *testing.T, data []byte) *profile.Profile {
	t.Helper()
	p := profile.New()
	ti := p.AddType(profile.TypeSamples)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<24)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimRight(sc.Text(), "\r\n ")
		if text == "" {
			continue
		}
		i := strings.LastIndexByte(text, ' ')
		if i < 0 {
			t.Fatalf("line %d: want \"stack count\"", line)
		}
		v, err := strconv.ParseInt(text[i+1:], 10, 64)
		if err != nil {
			t.Fatalf("line %d: count: %v", line, err)
		}
		var ids []profile.FrameID
		if text[:i] != "" { // an empty JVM stack is kept as " count"
			for _, name := range strings.Split(text[:i], ";") {
				ids = append(ids, p.AddFrame(profile.Frame{Name: name, Kind: profile.KindPython}))
			}
		}
		p.Add(profile.Sample{Stack: p.AddStack(ids), Value: v, Type: ti})
	}
	return p
}

func TestBrowserLargeAndDiff(t *testing.T) {
	ctx, problems := browsertest.Start(t)
	real := foldedProfile(t, corpus.Read(t, "jvm-profiler", "phil_stopwatch", "profile_slacker", "CombinedStack.folded.gz"))
	half := foldedProfile(t, corpus.Read(t, "jvm-profiler", "phil_stopwatch", "profile_slacker", "CombinedStack.folded.gz"))
	for i := range half.Samples {
		if i%2 == 0 {
			half.Samples[i].Value *= 3
		}
	}
	pages := []struct {
		name  string
		write func(*bytes.Buffer) error
	}{
		{"large", func(b *bytes.Buffer) error { return HTML(b, wideProfile(50000), Options{}) }},
		{"folded", func(b *bytes.Buffer) error { return HTML(b, real, Options{}) }},
		{"diff", func(b *bytes.Buffer) error { return DiffHTML(b, real, half, Options{}) }},
	}
	// FLAMEGRAPH_SHOTS names a directory to keep the screenshots in.
	dir := os.Getenv("FLAMEGRAPH_SHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	for _, pg := range pages {
		var buf bytes.Buffer
		if err := pg.write(&buf); err != nil {
			t.Fatal(err)
		}
		load(t, ctx, buf.Bytes())
		if browsertest.Eval[int](t, ctx, drawnPixels) == 0 {
			t.Errorf("%s: canvas is blank", pg.name)
		}
		screenshot(t, ctx, filepath.Join(dir, pg.name+".png"))
	}
	wait(ctx)
	if p := problems(); len(p) > 0 {
		t.Errorf("pages reported problems: %q", p)
	}
}
