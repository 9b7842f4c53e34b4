package lease

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"gocloud.dev/blob/fileblob"

	"github.com/sparkprof/sparkprof/store/objstore"
)

// TestLeaseOneHolder: of two nodes on one bucket, the first to ask takes
// the lease and renews it; the other gets it only once it has expired.
// The times are given, not waited for.
func TestLeaseOneHolder(t *testing.T) {
	fb, err := fileblob.OpenBucket(t.TempDir(), &fileblob.Options{Metadata: fileblob.MetadataDontWrite})
	if err != nil {
		t.Fatal(err)
	}
	defer fb.Close()
	b := objstore.New(fb)
	ctx := context.Background()
	const ttl = time.Minute
	a, c := New(b, "a", ttl, slog.Default()), New(b, "c", ttl, slog.Default())
	now := time.Now()
	for _, step := range []struct {
		name string
		l    *Lease
		at   time.Time
		want bool
	}{
		{"a takes the free lease", a, now, true},
		{"c finds it held", c, now.Add(time.Second), false},
		{"a renews it", a, now.Add(ttl / 2), true},
		{"c finds it held after a's first term", c, now.Add(ttl + time.Second), false},
		{"c takes it once a's renewal expired", c, now.Add(2 * ttl), true},
		{"a finds it c's", a, now.Add(2*ttl + time.Second), false},
	} {
		held, err := step.l.Hold(ctx, step.at)
		if err != nil || held != step.want {
			t.Fatalf("%s: held %v, %v; want %v", step.name, held, err, step.want)
		}
	}
	if !c.Valid(now.Add(2*ttl)) || c.Valid(now.Add(2*ttl+ttl/2+time.Second)) {
		t.Errorf("c's lease taken at %v of %v: valid until half its time is left", now.Add(2*ttl), ttl)
	}
}
