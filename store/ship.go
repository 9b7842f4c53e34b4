package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sparkprof/sparkprof/internal/syncfile"
	"github.com/sparkprof/sparkprof/store/wal"
)

// Files of a store directory kept for a bucket: the node's name, and per
// tenant the largest upload id shipped.
const (
	nodeFile    = "node"
	shippedFile = "shipped"
)

// maxSegmentBytes bounds the log records one shipped segment holds.
const maxSegmentBytes = 32 << 20

// nodeName returns the name of the node kept in dir, making one the first
// time: a node started again on the same directory ships under it, so
// that what it shipped before is told apart from what it ships now by
// the upload ids alone.
func nodeName(dir string) (string, error) {
	path := filepath.Join(dir, nodeFile)
	b, err := os.ReadFile(path)
	if err == nil {
		name := strings.TrimSpace(string(b))
		if !validNode(name) {
			return "", fmt.Errorf("store: %s: node name %q is not 1 to 64 letters, digits, '-' or '_'; delete the file to have a new one made", path, name)
		}
		return name, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("store: %w", err)
	}
	var r [8]byte
	rand.Read(r[:])
	name := hex.EncodeToString(r[:])
	if err := syncfile.Write(path, strings.NewReader(name+"\n")); err != nil {
		return "", fmt.Errorf("store: keep the node name: %w", err)
	}
	return name, syncfile.Dir(dir)
}

// validNode reports whether name can be a node's name in object names.
func validNode(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	return !strings.ContainsFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	})
}

// loadShipped reads the largest upload id the tenant shipped: its uploads
// up to it are in the bucket, so they leave the head replayed from the
// log, and the ids go on after it once the log that held them is gone.
func (t *tenant) loadShipped() error {
	path := filepath.Join(t.dir, shippedFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return fmt.Errorf("%s: %w; it holds the last upload id shipped to the bucket: write the largest id of the node's segments there", path, err)
	}
	t.shipped = n
	t.nextID = max(t.nextID, n+1)
	t.dropUploads(func(u *Upload) bool { return u.ID <= n })
	return nil
}

// Flush ships the head of every tenant to the bucket as segments, each
// the log records of a run of uploads, and then takes them out of the
// head and deletes the log segments that held only them: queries find
// them in the bucket. An upload is in the log (acknowledged) before it is
// shipped, so a bucket that is down costs nothing acknowledged: the head
// grows (see Backlogged) and is shipped when the bucket is back.
func (db *DB) Flush(ctx context.Context) error {
	if db.remote == nil {
		return nil
	}
	db.compactMu.Lock() // saveKeys's
	defer db.compactMu.Unlock()
	var errs []error
	for _, name := range db.Tenants() {
		for {
			n, err := db.shipOne(ctx, name)
			if err != nil {
				errs = append(errs, fmt.Errorf("tenant %q: %w", name, err))
			}
			if err != nil || n == 0 {
				break
			}
		}
	}
	return errors.Join(errs...)
}

// shipOne ships a segment of the tenant's oldest head uploads, at most
// maxSegmentBytes of log records, and returns how many it held.
func (db *DB) shipOne(ctx context.Context, name string) (int, error) {
	db.mu.RLock()
	t := db.tenants[name]
	if db.closed || t == nil {
		db.mu.RUnlock()
		return 0, nil
	}
	var ups []*Upload
	var size int64
	for _, u := range t.uploads {
		if len(ups) > 0 && size+u.wal.N > maxSegmentBytes {
			break
		}
		ups = append(ups, u)
		size += u.wal.N
	}
	db.mu.RUnlock()
	if len(ups) == 0 {
		return 0, nil
	}
	data, err := readRecords(ups, size)
	if err != nil {
		return 0, err
	}
	lo, hi := ups[0].ID, ups[len(ups)-1].ID
	obj := segmentObject(name, db.opts.Node, lo, hi)
	if err := db.remote.b.Write(ctx, obj, data, false); err != nil {
		db.remote.failed()
		return 0, err
	}
	db.remote.ok()
	db.remote.flushes.Add(1)
	db.log.Info("flushed head segment", "tenant", name, "object", obj, "uploads", len(ups), "bytes", len(data))
	// The keys go to the keys file before the log that holds them goes.
	if err := db.saveKeys(t, ups); err != nil {
		return 0, fmt.Errorf("save the upload keys: %w", err)
	}
	if err := syncfile.Write(filepath.Join(t.dir, shippedFile), strings.NewReader(strconv.FormatUint(hi, 10)+"\n")); err != nil {
		return 0, fmt.Errorf("keep the last upload id shipped: %w", err)
	}
	for _, u := range ups {
		u.node = db.opts.Node
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	t.shipped = max(t.shipped, hi)
	t.dropUploads(func(u *Upload) bool { return u.ID <= hi })
	t.pruneSegments(db.log)
	if db.opts.Role.Queries() { // a node that answers no queries keeps no view
		db.remote.addSegment(name, obj, ups)
	}
	return len(ups), nil
}

// readRecords reads the log records of ups, size bytes together, from
// their segment files, reading each run of adjacent records at once.
func readRecords(ups []*Upload, size int64) ([]byte, error) {
	out := make([]byte, 0, size)
	var f *os.File
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	for i := 0; i < len(ups); {
		w := ups[i].wal
		j := i + 1
		for j < len(ups) && ups[j].wal.Path == w.Path && ups[j].wal.Off == w.Off+w.N {
			w.N += ups[j].wal.N
			j++
		}
		if f == nil || f.Name() != w.Path {
			if f != nil {
				f.Close()
			}
			var err error
			if f, err = os.Open(w.Path); err != nil {
				return nil, err
			}
		}
		start := len(out)
		out = out[:start+int(w.N)]
		if _, err := f.ReadAt(out[start:], w.Off); err != nil {
			return nil, fmt.Errorf("%s: offset %d: %w", w.Path, w.Off, err)
		}
		i = j
	}
	return out, nil
}

// decodeSegment returns the uploads of a shipped segment's log records,
// by node.
func (db *DB) decodeSegment(obj, node string, data []byte) ([]*Upload, error) {
	recs, err := wal.Split(obj, data)
	if err != nil {
		return nil, err
	}
	ups, err := db.decodeRecords(recs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", obj, err)
	}
	for _, u := range ups {
		u.node = node
	}
	return ups, nil
}
