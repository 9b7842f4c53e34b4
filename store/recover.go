package store

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/sparkprof/sparkprof/store/block"
	"github.com/sparkprof/sparkprof/store/wal"
)

// load reads a tenant's blocks and replays its segments, skipping uploads
// a block already holds (a crash between writing a block and deleting the
// segments it made obsolete).
func (db *DB) load(name, dir string) error {
	bs, err := block.LoadAll(dir)
	if err != nil {
		return fmt.Errorf("store: tenant %q: %w", name, err)
	}
	blocks := storedBlocks(bs)
	t := &tenant{dir: dir, nextID: 1, blocks: blocks}
	if err := t.loadKeys(db.log, db.keyCutoff()); err != nil {
		return err
	}
	for _, b := range blocks {
		db.attach(b)
		t.nextID = max(t.nextID, b.Meta.MaxID()+1)
		var seq uint64
		var part int64
		fmt.Sscanf(filepath.Base(b.Path), "%020d-%010d.block", &part, &seq)
		t.nextBlock = max(t.nextBlock, seq+1)
	}
	segs, err := filepath.Glob(filepath.Join(dir, "*.wal"))
	if err != nil {
		return err
	}
	sort.Strings(segs)
	for _, path := range segs {
		n, seg, err := db.replay(t, path)
		if err != nil {
			return err
		}
		fmt.Sscanf(filepath.Base(path), "%08d.wal", &t.segN)
		seg.Size = n
		t.segs = append(t.segs, seg)
	}
	if db.opts.Bucket != nil {
		if err := t.loadShipped(); err != nil {
			return fmt.Errorf("store: tenant %q: %w", name, err)
		}
	}
	t.pruneSegments(db.log)
	db.tenants[name] = t
	db.log.Info("store: tenant loaded", "tenant", name, "uploads", len(t.uploads), "blocks", len(blocks), "segments", len(segs))
	return nil
}

// replay reads one segment. A bad record at its end (a crash during a
// write, or a write that failed and could not be cut back: never
// acknowledged) is left unread and logged; the file is not changed, since
// appends go to a new segment after a restart. A damaged record inside it
// (its checksum wrong, the disk's doing) is skipped and logged: the
// records after it are kept. Records are decoded in batches on every core,
// then taken in order: decoding is most of what a restart after a crash
// costs (about a millisecond per JDK recording). It returns the segment's
// size.
func (db *DB) replay(t *tenant, path string) (int64, wal.Segment, error) {
	seg := wal.Segment{Path: path}
	f, err := os.Open(path)
	if err != nil {
		return 0, seg, fmt.Errorf("store: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, seg, fmt.Errorf("store: %w", err)
	}
	size := st.Size()
	var batch []wal.Payload
	cutoff := db.keyCutoff()
	take := func() error {
		ups, err := db.decodeRecords(batch)
		if err != nil {
			return fmt.Errorf("store: %s: %w", path, err)
		}
		for i, u := range ups {
			u.wal = wal.Span{Path: path, Off: batch[i].Off, N: 8 + int64(len(batch[i].Data))}
			t.nextID = max(t.nextID, u.ID+1)
			t.addKey(u.Key, u.ID, u.Received, cutoff)
			if t.compacted(u.ID) {
				continue
			}
			seg.Add(u.ID)
			u.head = &headRollup{acct: &db.headRollups, res: int64(db.opts.Resolution)}
			t.uploads = append(t.uploads, u)
			t.headBytes += u.memSize
		}
		batch = batch[:0]
		return nil
	}
	r := bufio.NewReaderSize(f, 1<<20)
	var off int64
	var hdr [8]byte
	for {
		_, err := io.ReadFull(r, hdr[:])
		if err == io.EOF {
			err := take() // before seg is returned: take adds the batch's ids to it
			return off, seg, err
		}
		// tail leaves a torn record at the segment's end unread.
		tail := func(why string) (int64, wal.Segment, error) {
			if err := take(); err != nil {
				return 0, seg, err
			}
			db.log.Warn("store: ignoring an incomplete record at the end of a log segment, left by a crash or a failed write (never acknowledged)",
				"file", path, "offset", off, "bytes", size-off, "why", why)
			return size, seg, nil
		}
		if err != nil {
			return tail("short header")
		}
		n := int64(binary.LittleEndian.Uint32(hdr[:4]))
		sum := binary.LittleEndian.Uint32(hdr[4:])
		end := off + 8 + n
		if end > size {
			return tail("short record")
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(r, payload); err != nil {
			return 0, seg, fmt.Errorf("store: %s: offset %d: %w", path, off, err)
		}
		if wal.Checksum(payload) != sum {
			if end == size {
				return tail("checksum")
			}
			db.log.Error("store: skipping a damaged log record; its upload is lost, the records after it are kept", "file", path, "offset", off, "bytes", n)
			off = end
			continue
		}
		batch = append(batch, wal.Payload{Off: off, Data: payload})
		off += 8 + int64(n)
		if len(batch) == replayBatch {
			if err := take(); err != nil {
				return 0, seg, err
			}
		}
	}
}

// replayBatch is how many log records replay decodes at once: enough to
// keep every core busy, few enough to bound the memory of their payloads.
const replayBatch = 64

// compacted reports whether a block holds upload id.
func (t *tenant) compacted(id uint64) bool {
	for _, b := range t.blocks {
		if b.Meta.Contains(id) {
			return true
		}
	}
	return false
}
