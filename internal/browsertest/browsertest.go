// Package browsertest runs tests in a real headless Chromium (Debian's
// chromium package) through chromedp.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Start starts headless Chromium and returns a context for chromedp and
// a function returning the console errors and exceptions pages reported. Without Chromium the
// test is skipped, unless CI=true.
func Start(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium not installed (apt-get install chromium)")
		}
		t.Skip("chromium not installed")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(shortTempDir(t)),
		// Chromium leaves directories of its own (org.chromium.Chromium.*)
		// in its temporary directory: it gets one of the test's.
		chromedp.Env("TMPDIR=" + shortTempDir(t)),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	// A bound only for a page that never gives its signal: a busy machine
	// must not reach it.
	ctx, cancelTimeout := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	var problems []string
	var mu sync.Mutex
	err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+ev.ExceptionDetails.Text)
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value))
				}
				problems = append(problems, "console: "+strings.Join(args, " "))
			}
		}
	})
	if err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), problems...)
	}
}

// Eval evaluates a JavaScript expression in the page.
func Eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// Until evaluates a JavaScript expression in the page until it is truthy,
// and fails the test if it does not become so before the test's deadline;
// what the page shows after an event may come a frame later.
func Until(t *testing.T, ctx context.Context, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr)); err != nil {
		t.Fatalf("waiting for %s: %v", expr, err)
	}
}

// shortTempDir returns a temporary directory the test removes at its end,
// named short: Chromium's socket in it must fit a Unix socket's path (108
// bytes), which a subtest's t.TempDir, named for the test, may not.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
