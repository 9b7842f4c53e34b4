package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/profile"
)

// openFiles counts the process's open file descriptors.
func openFiles(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	return len(fds)
}

// smallUpload is a one-sample upload of app.
func smallUpload(app string, value int64) *Upload {
	p := profile.New()
	p.AddType(profile.TypeSamples)
	leaf := p.AddFrame(profile.Frame{Name: "main"})
	p.Add(profile.Sample{Value: value, Stack: p.AddStack([]profile.FrameID{leaf})})
	return &Upload{Labels: profile.Labels{{Name: profile.LabelServiceName, Value: app}}, Profile: p, From: 1, Until: 2}
}

// Two thousand tenants hold no more descriptors than MaxOpenSegments:
// those that wrote least recently are closed, and reopened (the same
// segment, appended to) when they write again; everything survives a
// restart.
func TestManyTenantsBoundedDescriptors(t *testing.T) {
	dir := t.TempDir()
	const tenants, maxOpen = 2000, 16
	db, err := Open(dir, Options{MaxOpenSegments: maxOpen})
	if err != nil {
		t.Fatal(err)
	}
	before := openFiles(t)
	for i := range tenants {
		if err := db.Append(fmt.Sprintf("tenant-%d", i), smallUpload("app", 1)); err != nil {
			t.Fatal(err)
		}
		if n := openFiles(t) - before; i%100 == 0 && n > maxOpen {
			t.Fatalf("tenant %d: %d descriptors more than before, want at most %d", i, n, maxOpen)
		}
	}
	again := []int{0, 999, tenants - 1} // parked, parked, open
	for _, i := range again {
		if err := db.Append(fmt.Sprintf("tenant-%d", i), smallUpload("app", 2)); err != nil {
			t.Fatal(err)
		}
	}
	if n := openFiles(t) - before; n > maxOpen {
		t.Errorf("%d descriptors more than before, want at most %d", n, maxOpen)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, i := range again {
		ten := fmt.Sprintf("tenant-%d", i)
		if n, total := count(t, db, ten, Query{}); n != 2 || total != 3 {
			t.Errorf("%s after a restart: %d uploads of %d samples, want 2 of 3", ten, n, total)
		}
		segs, _ := filepath.Glob(filepath.Join(dir, TenantDir(ten), "*.wal"))
		if len(segs) != 1 {
			t.Errorf("%s: segments %v: a reopened tenant should append to its segment", ten, segs)
		}
	}
}

func TestTenantLimits(t *testing.T) {
	db, err := Open(t.TempDir(), Options{MaxTenants: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, ten := range []string{"", "a"} {
		if err := db.Append(ten, smallUpload("app", 1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Append("b", smallUpload("app", 1)); !errors.Is(err, ErrTooManyTenants) {
		t.Errorf("a third tenant of two: %v, want ErrTooManyTenants", err)
	}
	if err := db.Append("a", smallUpload("app", 1)); err != nil {
		t.Errorf("a known tenant at the limit: %v", err)
	}
	for _, bad := range []string{strings.Repeat("x", MaxTenantBytes+1), "a\x1bb", "a\nb", "\xff"} {
		err := db.Append(bad, smallUpload("app", 1))
		if !errors.Is(err, ErrBadTenant) || strings.Contains(err.Error(), os.TempDir()) {
			t.Errorf("tenant %.20q: %v, want ErrBadTenant without the store's path", bad, err)
		}
	}
	if err := CheckTenant(strings.Repeat("é", MaxTenantBytes/2)); err != nil {
		t.Errorf("a tenant of %d bytes: %v", MaxTenantBytes, err)
	}
}
