package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/store/keyfile"
)

// TestUploadKeys sends the same keyed upload again at each stage of its
// life, in the head, replayed from the log, compacted (its log segment
// deleted), reopened, and merged into a new block: each retry is refused
// as a duplicate naming the stored upload, and the data is counted once.
func TestUploadKeys(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	hour := int64(time.Hour)
	first := keyedUpload(t, "exec-1/0", "1", 10*hour)
	if err := db.Append("acme", first); err != nil {
		t.Fatal(err)
	}
	_, want := count(t, db, "acme", Query{})
	if err := db.Append("other", keyedUpload(t, "exec-1/0", "1", 10*hour)); err != nil {
		t.Errorf("the same key of another tenant: %v", err)
	}
	if err := db.Append("acme", upload(t, "2")); err != nil { // no key: never a duplicate
		t.Fatal(err)
	}
	if err := db.Append("acme", upload(t, "2")); err != nil {
		t.Fatal(err)
	}
	_, want3 := count(t, db, "acme", Query{})

	reopen := func() {
		t.Helper()
		db.Close()
		if db, err = Open(dir, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name string
		do   func()
	}{
		{"in the head", func() {}},
		{"replayed from the log", reopen},
		{"compacted", func() {
			if err := db.Compact(); err != nil {
				t.Fatal(err)
			}
		}},
		{"reopened from its block", reopen},
		{"merged with a late upload", func() {
			if err := db.Append("acme", keyedUpload(t, "exec-3/0", "3", 10*hour+int64(time.Minute))); err != nil {
				t.Fatal(err)
			}
			if err := db.Compact(); err != nil {
				t.Fatal(err)
			}
			want3 += want
		}},
		{"reopened from the merged block", reopen},
	}
	for _, step := range steps {
		step.do()
		if id, ok := db.KeyStored("acme", "exec-1/0"); !ok || id != first.ID {
			t.Errorf("%s: KeyStored = %d, %v; want %d, true", step.name, id, ok, first.ID)
		}
		if _, ok := db.KeyStored("acme", "exec-9/0"); ok {
			t.Errorf("%s: a key never stored is reported stored", step.name)
		}
		retry := keyedUpload(t, "exec-1/0", "1", 10*hour)
		if err := db.Append("acme", retry); !errors.Is(err, ErrDuplicate) || retry.ID != first.ID {
			t.Errorf("%s: a retry got %v and id %d, want ErrDuplicate and id %d", step.name, err, retry.ID, first.ID)
		}
		if _, total := count(t, db, "acme", Query{}); total != want3 {
			t.Errorf("%s: total %d, want %d", step.name, total, want3)
		}
	}
	late := keyedUpload(t, "exec-3/0", "3", 10*hour)
	if err := db.Append("acme", late); !errors.Is(err, ErrDuplicate) {
		t.Errorf("the key of an upload merged into a block: %v, want ErrDuplicate", err)
	}
	if w := files(t, dir, "*.wal"); len(w) != 0 {
		t.Fatalf("log segments %v are left: the keys must come from elsewhere", w)
	}
	db.Close()
	checkTornKeysFile(t, dir)
}

// keyedUpload returns an upload of executor exec with key and a ten-second
// window from at.
func keyedUpload(t *testing.T, key, exec string, at int64) *Upload {
	t.Helper()
	u := upload(t, exec)
	u.Key, u.From, u.Until = key, at, at+int64(10*time.Second)
	return u
}

// checkTornKeysFile cuts the last line of tenant acme's keys file in the
// closed store in dir, which ends with exec-3/0's key, as a crash during
// an append leaves it: the keys before it still hold, and the next
// compaction rewrites the file.
func checkTornKeysFile(t *testing.T, dir string) {
	t.Helper()
	hour := int64(time.Hour)
	keys := filepath.Join(dir, TenantDir("acme"), keyfile.Name)
	data, err := os.ReadFile(keys)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(data), "\n") || !strings.Contains(string(data), `"exec-3/0"`) {
		t.Fatalf("keys file %q: want JSON lines, exec-3/0's last", data)
	}
	if err := os.WriteFile(keys, data[:len(data)-10], 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("a torn keys file stops the store: %v", err)
	}
	defer func() { db.Close() }()
	if err := db.Append("acme", keyedUpload(t, "exec-1/0", "1", 10*hour)); !errors.Is(err, ErrDuplicate) {
		t.Errorf("a key before the torn line: %v, want ErrDuplicate", err)
	}
	if err := db.Append("acme", keyedUpload(t, "exec-4/0", "4", 12*hour)); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if db, err = Open(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"exec-1/0", "exec-4/0"} {
		if err := db.Append("acme", keyedUpload(t, k, "1", 10*hour)); !errors.Is(err, ErrDuplicate) {
			t.Errorf("%s after the torn file was rewritten: %v, want ErrDuplicate", k, err)
		}
	}
}

// TestUploadKeyWindow: a key is forgotten once its window has passed, at
// Append and at the background's sweep.
func TestUploadKeyWindow(t *testing.T) {
	db, err := Open(t.TempDir(), Options{KeyWindow: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	u := upload(t, "1")
	u.Key = "k"
	if err := db.Append("acme", u); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	again := upload(t, "1")
	again.Key = "k"
	if err := db.Append("acme", again); err != nil || again.ID == u.ID {
		t.Errorf("past the key window: %v, id %d (first %d)", err, again.ID, u.ID)
	}
	time.Sleep(5 * time.Millisecond)
	db.forgetKeys()
	if st := db.Stats(); st.UploadKeys != 0 {
		t.Errorf("after the sweep %d keys are kept, want 0", st.UploadKeys)
	}
}
