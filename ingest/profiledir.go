package ingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/format/jfr"
	"github.com/sparkprof/sparkprof/internal/errkind"
	"github.com/sparkprof/sparkprof/internal/syncfile"
	"github.com/sparkprof/sparkprof/profile"
)

// WatchProfileDir imports the recordings Spark's profiler plugin copies to
// dir (spark.profiler.dfsDir, spark.executor.profiling.dfsDir in early
// Spark 4 builds, on a local or mounted file system) for tenant, as they
// grow: at start and then every interval until ctx ends. The plugin copies
// each executor's async-profiler recording to
// <dir>/<appId>[_<attempt>]/profile-exec-<id>.jfr (profile-driver.jfr for
// the driver) every spark.profiler.dfsWriteInterval (30 s), pausing the
// profiler so that each copy ends a JFR chunk: each whole chunk not
// imported yet becomes an upload labelled by its path, and a chunk still
// being copied waits for the next scan.
// Subdirectories are searched down to maxWatchDepth. How far each file was
// imported is kept in statePath (if not empty), so a restart imports only
// what is new; a file that was replaced (a new attempt) is imported again
// from its start.
func (p *Pipeline) WatchProfileDir(ctx context.Context, tenant, dir string, every time.Duration, statePath string) {
	w := newProfileWatch(statePath, p.log)
	for first := true; ; first = false {
		start := time.Now()
		if n := p.scanProfileDir(ctx, tenant, dir, w); first || n > 0 {
			p.log.Info("profile directory scanned", "dir", dir, "chunks_imported", n, "took", time.Since(start).Round(time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// profileWatch is how far a watch has imported each recording: by path,
// the offset past its last whole chunk imported and a digest of its first
// chunk header, which tells a file replaced by a new recording.
type profileWatch struct {
	path  string // the state file, or ""
	files map[string]recordingProgress
}

// recordingProgress is how far a recording was imported.
type recordingProgress struct {
	Offset int64  `json:"offset"`
	Head   uint64 `json:"head"` // xxhash of the first chunk header
	// ModTime is the file's modification time (Unix ns) when it was last
	// read: a file read to its end, of the same size and time, is not
	// opened again.
	ModTime int64 `json:"modTime"`
}

// newProfileWatch reads the state file at path, if any; a damaged one is
// logged and the recordings are imported again, which the upload keys make
// harmless within the store's key window.
func newProfileWatch(path string, log *slog.Logger) *profileWatch {
	w := &profileWatch{path: path, files: map[string]recordingProgress{}}
	if path == "" {
		return w
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return w
	}
	if err == nil {
		err = json.Unmarshal(data, &w.files)
	}
	if err != nil {
		log.Warn("profile directory state unreadable; recordings are read again from their start", "file", path, "err", err)
		w.files = map[string]recordingProgress{}
	}
	return w
}

// save writes the state file atomically, fsynced as the event logs are.
func (w *profileWatch) save() error {
	if w.path == "" {
		return nil
	}
	data, err := json.Marshal(w.files)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(w.path), 0o755); err != nil {
		return err
	}
	tmp := w.path + ".tmp"
	if err := syncfile.Write(tmp, bytes.NewReader(data)); err != nil {
		return err
	}
	return os.Rename(tmp, w.path)
}

// readDir lists a directory of a profile dir; a variable so that tests can
// make it fail as a mount's hiccup does.
var readDir = os.ReadDir

// maxScanBytes bounds what one scan reads of one recording, so that a
// large backlog is imported over several scans rather than held at once;
// a variable so that tests can make it small.
var maxScanBytes int64 = 256 << 20

// scanProfileDir imports the whole chunks added to the recordings below
// dir since the watch last looked, and returns how many it imported.
func (p *Pipeline) scanProfileDir(ctx context.Context, tenant, dir string, w *profileWatch) int {
	n := 0
	changed := false
	present := map[string]bool{}
	listed := true // every directory could be read
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		entries, err := readDir(dir)
		if err != nil {
			p.log.Warn("profile dir unreadable", "dir", dir, "err", err)
			listed = false
			return
		}
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, ".") {
				continue
			}
			path := filepath.Join(dir, name)
			if e.IsDir() {
				if depth > 0 {
					walk(path, depth-1)
				}
				continue
			}
			if !strings.HasSuffix(name, ".jfr") || format.SparkPathLabels(path) == nil {
				continue
			}
			present[path] = true
			k, moved := p.importRecording(ctx, tenant, path, w)
			n += k
			changed = changed || moved
		}
	}
	walk(dir, maxWatchDepth)
	// A recording no longer there is forgotten, unless a directory could
	// not be read (a mount's hiccup): its recordings would be read again
	// from their start.
	for path := range w.files {
		if listed && !present[path] {
			delete(w.files, path)
			changed = true
		}
	}
	if changed {
		if err := w.save(); err != nil {
			p.log.Warn("cannot save the profile directory state; a restart reads the recordings again", "file", w.path, "err", err)
		}
	}
	return n
}

// importRecording imports the whole chunks of the recording at path past
// where the watch left it, and returns how many it imported and whether
// its progress moved.
func (p *Pipeline) importRecording(ctx context.Context, tenant, path string, w *profileWatch) (int, bool) {
	prog := w.files[path]
	if st, err := os.Stat(path); err != nil || st.Size() == prog.Offset && st.ModTime().UnixNano() == prog.ModTime {
		return 0, false // gone, or unchanged since the last scan: not opened
	}
	f, err := os.Open(path)
	if err != nil {
		p.log.Warn("recording unreadable", "path", path, "err", err)
		return 0, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, false
	}
	var hdr [68]byte // a chunk header
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		return 0, false // not a whole header yet
	}
	if head := xxhash.Sum64(hdr[:]); head != prog.Head || st.Size() < prog.Offset {
		prog = recordingProgress{Head: head} // new, or replaced by a new recording
	}
	if st.Size() == prog.Offset {
		return 0, false
	}
	// A scan reads up to maxScanBytes, or the whole of a first chunk that
	// is larger, so that such a chunk is imported rather than waited for.
	size := min(st.Size()-prog.Offset, maxScanBytes)
	var next [16]byte // the next chunk's magic, version and size
	if _, err := f.ReadAt(next[:], prog.Offset); err == nil {
		if n := int64(binary.BigEndian.Uint64(next[8:])); n > size && n <= min(st.Size()-prog.Offset, jfr.MaxChunkSize) {
			size = n
		}
	}
	// The chunks read draw their memory from the ingest memory, as a
	// body sent does: a scan while uploads hold it waits for the next.
	body, err := p.ReadBody(io.NewSectionReader(f, prog.Offset, size), size, size)
	if errkind.Of(err) == errkind.Unavailable {
		p.log.Warn("recording not read: the ingest memory is spent; it is tried again at the next scan", "path", path, "err", err)
		return 0, false
	}
	if err != nil {
		p.log.Warn("recording unreadable", "path", path, "err", err)
		return 0, false
	}
	defer body.Free()
	data := body.Data
	whole, damage := jfr.WholeChunks(data)
	if damage != nil {
		// The chunks after a damaged header cannot be found: those before
		// it are imported, and the rest of the file as it is now skipped.
		p.log.Warn("damaged recording: its chunks from the damage on are skipped", "path", path, "offset", prog.Offset+int64(whole), "err", damage)
		p.senders.Failed(recordingSender(tenant, path), fmt.Sprintf("damaged recording: %v; skipped to offset %d", damage, prog.Offset+int64(len(data))))
	}
	chunks, _ := jfr.Chunks(data[:whole])
	n := 0
	off := prog.Offset
	complete := true // every chunk was imported or refused for good
chunks:
	for _, c := range chunks {
		release, err := p.Turn(ctx)
		if err != nil {
			complete = false // shutting down
			break
		}
		// The key names the chunk by its file, recording and place, so that
		// a restart that lost the state imports it once.
		key := fmt.Sprintf("spark-profiler:%016x", xxhash.Sum64String(fmt.Sprintf("%s\x00%x\x00%d\x00%d", path, prog.Head, off, len(c))))
		res, err := p.Import(tenant, File{Name: path, Kind: "profile", Data: c, Key: key, Body: body})
		release()
		// The agents page lists each recording as a sender, so that one
		// that does not import shows why.
		who := recordingSender(tenant, path)
		switch {
		case errkind.Of(err) == errkind.Unavailable:
			p.log.Warn("recording chunk not stored; it is tried again at the next scan", "path", path, "offset", off, "err", err)
			complete = false
			break chunks
		case err != nil:
			p.log.Warn("recording chunk not imported", "path", path, "offset", off, "err", err)
			p.senders.Failed(who, fmt.Sprintf("chunk at offset %d: %v", off, err))
		case !res.Duplicate:
			n++
			p.senders.Uploaded(who, len(c), 0, 0)
		}
		off += int64(len(c))
	}
	if damage != nil && complete {
		off = prog.Offset + int64(len(data))
	}
	old, seen := w.files[path]
	w.files[path] = recordingProgress{Offset: off, Head: prog.Head, ModTime: st.ModTime().UnixNano()}
	return n, !seen || old != w.files[path]
}

// recordingSender is the agents list's row of a recording in a profile
// directory: its app, as Import names it (the app id of its path, else the
// file name), and executor.
func recordingSender(tenant, path string) Sender {
	ls := format.SparkPathLabels(path)
	app, ok := ls.Get(profile.LabelAppID)
	if !ok {
		app = appFromName(path)
	}
	ls = ls.Merge(profile.Labels{{Name: profile.LabelServiceName, Value: app}})
	return Sender{Tenant: tenant, Remote: path, SpyName: "spark-profiler", Labels: ls}
}
