package ingest

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/applog"
	"github.com/sparkprof/sparkprof/eventlog"
	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/internal/english"
	"github.com/sparkprof/sparkprof/internal/errkind"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/spark"
	"github.com/sparkprof/sparkprof/store"
)

// File is one file sent whole to the server.
type File struct {
	// Name is the file's path as it was on disk: Spark's profiler layout
	// (<appId>/profile-exec-<id>.jfr) labels the profile it holds.
	Name string
	// Kind is "eventlog", "logs", "profile", or "" to tell by content.
	Kind string
	// App is the application the file belongs to: container logs of one
	// App are analysed together; profiles get it as service_name (default:
	// the Spark app id in the profile, or the file name).
	App string
	// Format forces a profile format (see format.Options).
	Format string
	Data   []byte
	// JFRLabels is the Pyroscope LabelsSnapshot of a JFR's contexts, as
	// saved beside it (see format.LabelsBeside), gzipped or not.
	JFRLabels []byte
	// Key names a profile the same on every import of it (store.Upload's
	// Key): a profile imported again within the store's key window is not
	// stored twice. Event logs and container logs replace their earlier
	// import by name and need none.
	Key string
	// Body, when Data came in a body read by ReadBody, draws the memory of
	// its decoding with the body's (Profile.Body).
	Body *Body
	// ContentType, when it is multipart/form-data, says that Data holds
	// a JFR and its LabelsSnapshot as Pyroscope's agent sends them
	// (ImportFile).
	ContentType string
}

// Result says what an import stored.
type Result struct {
	App      *spark.Summary `json:"app,omitempty"` // for event logs and container logs
	Findings int            `json:"findings,omitempty"`
	ID       uint64         `json:"id,omitempty"` // for profiles: the upload
	// Duplicate says that the profile was stored before under the same key
	// (File.Key), as upload ID, and not stored again.
	Duplicate bool           `json:"duplicate,omitempty"`
	Samples   int            `json:"samples,omitempty"`
	Labels    profile.Labels `json:"labels,omitempty"`
	// Clamped counts the profile's samples whose times lay far outside
	// its window, moved to its nearest end.
	Clamped int `json:"clamped,omitempty"`
}

// Import stores one file for tenant: an event log is saved and analysed;
// container logs are saved with the other files of their app and the app
// analysed again; a profile is stored as an upload (Decode, then Store),
// and also feeds the metric series of a log-analysed app it names. A file
// whose kind is not given is told by its content.
func (p *Pipeline) Import(tenant string, f File) (*Result, error) {
	start := time.Now()
	if err := checkFileName(f.Name); err != nil {
		return nil, err
	}
	kind := f.Kind
	if kind == "" && looksLikeEventLog(f.Data) {
		kind = "eventlog"
	}
	if kind == "eventlog" {
		return p.ImportEventLog(tenant, f.Name, bytes.NewReader(f.Data))
	}
	var decodeErr error
	if kind != "logs" {
		if id, ok := p.KeyStored(tenant, f.Key); ok {
			return &Result{ID: id, Duplicate: true}, nil
		}
		if f.JFRLabels != nil {
			kind = "profile"
		}
		d := p.decode(Profile{Source: f.Name, Format: f.Format, Data: f.Data, JFRLabels: f.JFRLabels, Agent: "import", Bytes: len(f.Data), Key: f.Key, Body: f.Body}, start)
		defer d.release()
		switch k := errkind.Of(d.err); {
		case k == errkind.TooLarge, k == errkind.Unavailable, d.err != nil && kind == "profile":
			return nil, d.err
		case d.err != nil:
			decodeErr = d.err // perhaps a container log
		default:
			res, err := p.importProfile(tenant, f, d.u, start)
			if res != nil {
				res.Clamped = d.clamped
			}
			return res, err
		}
	}
	return p.ImportLogs(tenant, f.Name, f.App, bytes.NewReader(f.Data), decodeErr)
}

// importProfile stores the decoded profile of file f as an upload of the
// app f names (else the one its samples carry, else the file's name); for
// an app analysed from container logs, its metric series go to that app's
// bundle.
func (p *Pipeline) importProfile(tenant string, f File, u *store.Upload, start time.Time) (*Result, error) {
	prof := u.Profile
	app := f.App
	if app == "" {
		app, _ = prof.Labels.Get(profile.LabelAppID)
	}
	app = cmp.Or(app, appFromName(f.Name))
	bundle := p.cfg.Apps.Bundle(tenant, app)
	if bundle != nil && len(prof.Series) > 0 {
		var rep *analysis.Report
		err := p.withLogMemory(func(mem eventlog.Memory) (err error) {
			rep, err = p.cfg.Apps.AddToBundle(tenant, app, f.Name, bytes.NewReader(f.Data), mem)
			return err
		})
		if err != nil {
			return nil, logError("container log "+f.Name, "", err)
		}
		bundle = rep
		if len(prof.Samples) == 0 {
			return &Result{App: &rep.App, Findings: len(rep.Findings)}, nil
		}
		prof.Series = nil // the bundle's report has them; stored too, the app's page would show them twice
	}
	ls := profile.Labels{{Name: profile.LabelServiceName, Value: app}}
	if bundle != nil {
		ls = append(ls, profile.Label{Name: profile.LabelAppID, Value: bundle.App.ID})
	}
	for _, l := range prof.Labels {
		if l.Name == profile.LabelAppID || l.Name == profile.LabelExecutorID || l.Name == profile.LabelRole || l.Name == profile.LabelAppAttempt {
			ls = append(ls, l)
		}
	}
	ls = ls.Normalize()
	prof.LabelAll(ls)
	u.Labels = ls
	duplicate, err := p.Store(tenant, u, start)
	switch {
	case err != nil:
		return nil, err
	case duplicate:
		return &Result{ID: u.ID, Duplicate: true, Labels: ls}, nil
	}
	return &Result{ID: u.ID, Samples: len(prof.Samples), Labels: ls}, nil
}

// ImportEventLog saves an event log read from r, of at most the pipeline's
// MaxLogBytes, and analyses it.
func (p *Pipeline) ImportEventLog(tenant, name string, r io.Reader) (*Result, error) {
	if err := checkFileName(name); err != nil {
		return nil, err
	}
	head := &headBuffer{max: 1 << 20}
	var rep *analysis.Report
	err := p.withLogMemory(func(mem eventlog.Memory) (err error) {
		rep, err = p.cfg.Apps.AddEventLog(tenant, name, io.TeeReader(p.limitLog(r), head), mem)
		return err
	})
	if err != nil {
		// A log the ingest memory refused is not decoded again to tell
		// whether it is damaged.
		if k := errkind.Of(err); k == errkind.TooLarge || k == errkind.Unavailable {
			return nil, logError("event log "+name, "", err)
		}
		if derr := damagedZstd(head.b); derr != nil {
			return nil, errkind.Errorf(errkind.Unprocessable, "event log %s: its zstd stream is damaged: %v; the file is corrupt: copy it again from where Spark wrote it", name, derr)
		}
		return nil, logError("event log "+name, "serve --max-log-gb; or let serve --eventlog-dir read it in place", err)
	}
	return &Result{App: &rep.App, Findings: len(rep.Findings)}, nil
}

// headBuffer keeps the first max bytes written to it.
type headBuffer struct {
	b   []byte
	max int
}

func (h *headBuffer) Write(b []byte) (int, error) {
	if room := h.max - len(h.b); room > 0 {
		h.b = append(h.b, b[:min(room, len(b))]...)
	}
	return len(b), nil
}

// damagedZstd returns the error of a zstd stream that head, its start,
// shows damaged (not merely cut short), nil when head is no zstd stream or
// reads well as far as it goes: an event log whose codec fails is a
// damaged file, and says so, rather than being taken for a container log.
func damagedZstd(head []byte) error {
	if eventlog.Detect("", head) != eventlog.Zstd {
		return nil
	}
	zr, err := zstd.NewReader(bytes.NewReader(head), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(256<<20))
	if err != nil {
		return err
	}
	defer zr.Close()
	_, err = io.Copy(io.Discard, zr)
	if err == nil || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil
	}
	return err
}

// ImportLogs saves a container log read from r, of at most the pipeline's
// MaxLogBytes, with the other files of its app (app, else the file name's)
// and analyses the app again. A body without a log line in its first MiB
// is refused; decodeErr, if not nil, says why it was not taken for a
// profile.
func (p *Pipeline) ImportLogs(tenant, name, app string, r io.Reader, decodeErr error) (*Result, error) {
	if err := checkFileName(name); err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(p.limitLog(r), 1<<20)
	head, _ := br.Peek(1 << 20)
	if !looksLikeLog(head) {
		err := fmt.Errorf("%s: not a container log (no line in a log4j or JSON layout in the first MiB)", name)
		if decodeErr != nil {
			err = fmt.Errorf("%s: neither an event log, a container log nor a profile (as a profile: %w)", name, decodeErr)
		}
		return nil, errkind.New(errkind.Unprocessable, err)
	}
	var rep *analysis.Report
	err := p.withLogMemory(func(mem eventlog.Memory) (err error) {
		rep, err = p.cfg.Apps.AddToBundle(tenant, cmp.Or(app, appFromName(name)), name, br, mem)
		return err
	})
	if err != nil {
		return nil, logError("container log "+name, "serve --max-log-gb", err)
	}
	return &Result{App: &rep.App, Findings: len(rep.Findings)}, nil
}

// limitLog bounds r to the pipeline's MaxLogBytes: reading past it fails
// with a *logTooLarge.
func (p *Pipeline) limitLog(r io.Reader) io.Reader {
	return &logReader{r: r, left: p.cfg.MaxLogBytes + 1, limit: p.cfg.MaxLogBytes}
}

// logReader reads a log of at most limit bytes.
type logReader struct {
	r           io.Reader
	left, limit int64
}

func (l *logReader) Read(b []byte) (int, error) {
	if l.left <= 0 {
		return 0, &logTooLarge{limit: l.limit}
	}
	if int64(len(b)) > l.left {
		b = b[:l.left]
	}
	n, err := l.r.Read(b)
	l.left -= int64(n)
	if l.left <= 0 {
		return n - 1, &logTooLarge{limit: l.limit} // the byte past the limit is not passed on
	}
	return n, err
}

// logTooLarge is a log past the pipeline's MaxLogBytes.
type logTooLarge struct{ limit int64 }

func (e *logTooLarge) Error() string { return fmt.Sprintf("larger than %d bytes", e.limit) }

// logError is the error of a log whose saving or analysis failed with
// err: errkind.TooLarge past the size limit, which hint tells how to
// raise; the ingest memory's errkind.TooLarge or errkind.Unavailable
// (withLogMemory) as it is; else errkind.Unprocessable.
func logError(what, hint string, err error) error {
	var tooBig *logTooLarge
	if errors.As(err, &tooBig) {
		return errkind.Errorf(errkind.TooLarge, "%s: larger than %d bytes (%s)", what, tooBig.limit, hint)
	}
	if k := errkind.Of(err); k == errkind.TooLarge || k == errkind.Unavailable {
		return &errkind.Error{Kind: k, RetryAfter: errkind.RetryAfter(err), Err: fmt.Errorf("%s: %w", what, err)}
	}
	return errkind.Errorf(errkind.Unprocessable, "%s: %w", what, err)
}

// logMemory is the ingest memory as the readers of event logs draw from
// it (eventlog.Memory).
type logMemory struct{ res *reservation }

func (m logMemory) Reserve(n int64, what string) error { return m.res.reserve(n, what) }

// withLogMemory runs analyse, which reads event logs, with memory drawn
// from the ingest memory as they are read and decoded, and given back
// after: a line or a log the whole ingest memory could not hold is
// refused as errkind.TooLarge, one that would fit but for the uploads in
// progress as errkind.Unavailable. What a refused analysis allocated is
// collected (collectRefused).
func (p *Pipeline) withLogMemory(analyse func(eventlog.Memory) error) error {
	res := &reservation{b: p.mem}
	err := analyse(logMemory{res})
	collectRefused(res.n, err)
	res.free()
	return err
}

// checkFileName refuses, as errkind.BadInput, a file name that names no
// file: empty, or whose last element is "." or "..".
func checkFileName(name string) error {
	switch base := path.Base(strings.ReplaceAll(name, "\\", "/")); {
	case name == "", base == ".", base == "..", base == "/":
		return errkind.Errorf(errkind.BadInput, "file name %q names no file: send the file's name or path (path=...)", english.Truncate(name, 200))
	}
	return nil
}

// appFromName is the app a file belongs to when nothing else names it: its
// name less directories and extensions; for a profile PySpark dumped per
// RDD or UDF (rdd_<id>.pstats), the directory it dumped them all into.
func appFromName(name string) string {
	name = strings.ReplaceAll(name, "\\", "/")
	if isPySparkDump(name) {
		if dir := path.Base(path.Dir(name)); dir != "." && dir != "/" {
			return dir
		}
	}
	base := strings.TrimSuffix(path.Base(name), ".gz")
	return strings.TrimSuffix(base, path.Ext(base))
}

// isPySparkDump reports whether a file name is one PySpark's profilers
// write, one per RDD or UDF.
func isPySparkDump(name string) bool {
	ls := format.SparkPathLabels(name)
	_, rdd := ls.Get(profile.LabelRDDID)
	_, udf := ls.Get(profile.LabelUDFID)
	return rdd || udf
}

// looksLikeEventLog reports whether data is a Spark event log: JSON lines
// starting with a listener event, plain or in one of Spark's codecs.
func looksLikeEventLog(data []byte) bool {
	switch eventlog.Detect("", data[:min(len(data), 64)]) {
	case eventlog.Zstd, eventlog.LZ4, eventlog.Snappy, eventlog.LZF:
		return true
	}
	h := head(data, 64)
	return bytes.HasPrefix(bytes.TrimSpace(h), []byte(`{"Event"`))
}

// looksLikeLog reports whether the first MiB of data (decompressed) has a
// line in a layout package applog knows.
func looksLikeLog(data []byte) bool {
	l, err := applog.Parse(bytes.NewReader(head(data, 1<<20)), "head", applog.Options{})
	return err == nil && l.Layout != ""
}

// head returns the first n bytes of data, inflated when it is gzipped (of
// a stream cut short, what it inflated; of a damaged one, the raw bytes):
// no more than n bytes are inflated, so that a gzip bomb costs no more.
func head(data []byte, n int) []byte {
	raw := data[:min(len(data), n)]
	if !format.IsGzip(data) {
		return raw
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return raw
	}
	out := make([]byte, n)
	k, _ := io.ReadFull(zr, out)
	if k == 0 {
		return raw
	}
	return out[:k]
}
