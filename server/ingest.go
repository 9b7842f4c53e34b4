package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/internal/readall"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store"
)

// labelAliases maps label names other agents use to the standard ones:
// CERN's PyroscopePlugin's, Spark's configuration keys, and the labels
// Spark puts on its Kubernetes pods (spark-app-selector, spark-exec-id,
// spark-role) as a collector such as Grafana Alloy passes them on, with
// underscores.
var labelAliases = map[string]string{
	"appId": profile.LabelAppID, "app_id": profile.LabelAppID, "spark.app.id": profile.LabelAppID, "spark_app_selector": profile.LabelAppID,
	"executorId": profile.LabelExecutorID, "executor_id": profile.LabelExecutorID, "spark.executor.id": profile.LabelExecutorID, "spark_exec_id": profile.LabelExecutorID,
	"hostname": profile.LabelHost, "hostName": profile.LabelHost,
	"attemptId":  profile.LabelAppAttempt,
	"spark_role": profile.LabelRole,
}

// driverExecutor gives an upload of the driver, by its role, the driver's
// executor id, as Spark names it, when it has none: a driver pod carries
// spark-role=driver but no spark-exec-id.
func driverExecutor(ls profile.Labels) profile.Labels {
	if role, _ := ls.Get(profile.LabelRole); role != "driver" {
		return ls
	}
	if _, ok := ls.Get(profile.LabelExecutorID); ok {
		return ls
	}
	return ls.Merge(profile.Labels{{Name: profile.LabelExecutorID, Value: "driver"}})
}

// pyroscopeTypes are the profile-type suffixes Pyroscope agents append to
// the application name ("myapp.cpu") and the sample types they name.
var pyroscopeTypes = []struct {
	suffix string
	typ    profile.SampleType
}{
	{".cpu", profile.TypeCPU}, {".itimer", profile.TypeCPU}, {".wall", profile.TypeWall},
	{".alloc_objects", profile.TypeAllocObjects}, {".alloc_in_new_tlab_objects", profile.TypeAllocObjects},
	{".alloc_space", profile.TypeAllocBytes}, {".alloc_in_new_tlab_bytes", profile.TypeAllocBytes},
	{".lock_count", profile.TypeLockCount}, {".lock_duration", profile.TypeLockDelay},
}

// pyroscopeUnits maps the units a Pyroscope upload declares to the sample
// type they imply, where the name has no type suffix.
var pyroscopeUnits = map[string]profile.SampleType{
	"objects": profile.TypeAllocObjects, "bytes": profile.TypeAllocBytes,
	"lock_samples": profile.TypeLockCount, "lock_nanoseconds": profile.TypeLockDelay,
}

// cutTypeSuffix returns app without a Pyroscope profile-type suffix, and the
// sample type the suffix names (zero without one).
func cutTypeSuffix(app string) (string, profile.SampleType) {
	for _, t := range pyroscopeTypes {
		if name, ok := strings.CutSuffix(app, t.suffix); ok {
			return name, t.typ
		}
	}
	return app, profile.SampleType{}
}

// defaultSampleRate is the sampling rate, in Hz, Pyroscope assumes for an
// upload that does not give one.
const defaultSampleRate = 100

// typeUntyped gives the samples of a format without types of its own
// (folded stacks, lines: counts of "samples") the type the upload's name
// suffix or units say, as Pyroscope reads them: a CPU or wall-clock count
// becomes time, each sample worth 1/sampleRate seconds. Profiles that carry
// their own types (JFR, pprof, ...) are left as they are.
func typeUntyped(p *profile.Profile, nameType profile.SampleType, units string, sampleRate int64) {
	if len(p.Types) != 1 || p.Types[0] != profile.TypeSamples {
		return
	}
	t := nameType
	if t == (profile.SampleType{}) {
		t = pyroscopeUnits[units]
	}
	if t == (profile.SampleType{}) {
		return
	}
	p.SetType(0, t)
	if t != profile.TypeCPU && t != profile.TypeWall {
		return
	}
	for i := range p.Samples {
		p.Samples[i].Value *= int64(time.Second) / sampleRate
	}
}

// parseSampleRate reads an upload's sampleRate: samples per second,
// defaultSampleRate when absent.
func parseSampleRate(v string) (int64, error) {
	if v == "" {
		return defaultSampleRate, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || n > int64(time.Second) {
		return 0, fmt.Errorf("sampleRate %q: want samples per second, a positive integer", v)
	}
	return n, nil
}

// uploadSender returns the sender of an upload, by its labels when its
// name parses.
func uploadSender(r *http.Request) sender {
	q := r.URL.Query()
	who := sender{tenant: tenant(r), remote: r.RemoteAddr, spyName: q.Get("spyName"), name: q.Get("name")}
	if labels, _, err := parseName(who.name); err == nil {
		who.labels = labels
	}
	return who
}

// parseCount parses an optional count (the sparkprof agent's dropped
// windows).
func parseCount(v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q: want a count, a non-negative integer", v)
	}
	return n, nil
}

// parseName parses Pyroscope's "app.cpu{key=value,...}" into labels, and
// the sample type its suffix names (zero without one).
func parseName(name string) (profile.Labels, profile.SampleType, error) {
	app, rest, hasLabels := strings.Cut(name, "{")
	app, typ := cutTypeSuffix(strings.TrimSpace(app))
	if app == "" {
		return nil, typ, fmt.Errorf("name %q: want app{key=value,...}", name)
	}
	ls := profile.Labels{{Name: profile.LabelServiceName, Value: app}}
	if hasLabels {
		body, ok := strings.CutSuffix(strings.TrimSpace(rest), "}")
		if !ok {
			return nil, typ, fmt.Errorf("name %q: labels do not end with }", name)
		}
		for _, kv := range strings.Split(body, ",") {
			if strings.TrimSpace(kv) == "" {
				continue
			}
			k, v, ok := strings.Cut(kv, "=")
			k, v = strings.TrimSpace(k), strings.Trim(strings.TrimSpace(v), `"`)
			if !ok || k == "" {
				return nil, typ, fmt.Errorf("name %q: label %q: want key=value", name, kv)
			}
			if std, ok := labelAliases[k]; ok {
				k = std
			}
			if k == "__name__" {
				continue
			}
			ls = append(ls, profile.Label{Name: k, Value: v})
		}
	}
	ls = driverExecutor(ls.Normalize())
	if err := checkLabels(ls); err != nil {
		return nil, typ, fmt.Errorf("name %q: %w", name, err)
	}
	return ls, typ, nil
}

// Limits on an upload's labels, Pyroscope's defaults: a label set is a
// series of uploads, not a place for per-sample values.
const (
	maxUploadLabels    = 30
	maxLabelNameBytes  = 1024
	maxLabelValueBytes = 2048
)

// checkLabels reports an upload label set over the limits, or a label name
// a selector could not name: letters, digits, '_', '.' and '-' only.
func checkLabels(ls profile.Labels) error {
	if len(ls) > maxUploadLabels {
		return fmt.Errorf("%d labels, over the limit of %d: per-task and per-thread values belong in the profile (thread names, JFR contexts), not in the upload's labels", len(ls), maxUploadLabels)
	}
	for _, l := range ls {
		if l.Name == "" || len(l.Name) > maxLabelNameBytes || strings.IndexFunc(l.Name, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-')
		}) >= 0 {
			return fmt.Errorf("label name %q: want 1 to %d letters, digits, '_', '.' or '-'", l.Name, maxLabelNameBytes)
		}
		if len(l.Value) > maxLabelValueBytes || !utf8.ValidString(l.Value) {
			return fmt.Errorf("label %s: value of %d bytes; want valid UTF-8 of at most %d bytes", l.Name, len(l.Value), maxLabelValueBytes)
		}
	}
	return nil
}

// parseTime reads from/until in seconds, ms, µs or ns, told apart by size.
func parseTime(s string) (int64, error) {
	n, err := parseCount(s)
	if err != nil {
		return 0, fmt.Errorf("time %q: want a Unix time in s, ms, µs or ns, a non-negative integer", s)
	}
	switch {
	case n > 1e17:
		return n, nil
	case n > 1e14:
		return n * 1e3, nil
	case n > 1e11:
		return n * 1e6, nil
	case n > math.MaxInt64/int64(time.Second):
		return 0, fmt.Errorf("time %q: seconds after the year 2262; want a Unix time in s, ms, µs or ns", s)
	}
	return n * 1e9, nil
}

// formatFor maps Pyroscope's format parameter to a decoder name.
func formatFor(f string) string {
	switch f {
	case "jfr", "pprof", "speedscope":
		return f
	}
	return "folded" // folded, lines, trie (unsupported) and anything else
}

func (s *Server) handleIngest(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ten := tenant(r)
	q := r.URL.Query()
	who := uploadSender(r)
	fail := func(code int, format string, args ...any) {
		s.metrics.uploadError(code)
		s.agents.failed(who, fmt.Sprintf(format, args...))
		httpError(w, code, format, args...)
	}
	labels, nameType, err := parseName(q.Get("name"))
	if err != nil {
		fail(http.StatusBadRequest, "%v", err)
		return
	}
	if ok, wait := s.allow(ten); !ok {
		w.Header().Set("Retry-After", retryAfter(wait))
		fail(http.StatusTooManyRequests, "tenant %q is over its upload rate (%g/s); retry in %s", ten, s.cfg.RatePerSecond, wait.Round(time.Millisecond))
		return
	}
	dropped, err := parseCount(q.Get("dropped"))
	if err != nil {
		fail(http.StatusBadRequest, "dropped: %v", err)
		return
	}
	sampleRate, err := parseSampleRate(q.Get("sampleRate"))
	if err != nil {
		fail(http.StatusBadRequest, "%v", err)
		return
	}
	from, err := parseTime(q.Get("from"))
	if err != nil {
		fail(http.StatusBadRequest, "from: %v", err)
		return
	}
	until, err := parseTime(q.Get("until"))
	if err != nil {
		fail(http.StatusBadRequest, "until: %v", err)
		return
	}
	key, err := idempotencyKey(r)
	if err != nil {
		fail(http.StatusBadRequest, "%v", err)
		return
	}
	if id, ok := s.keyStored(ten, key); ok {
		s.replayed(w, who, ten, key, id)
		return
	}
	release, err := s.turn(r.Context())
	if err != nil {
		fail(http.StatusServiceUnavailable, "%v", err)
		return
	}
	defer release()
	buf := bodyBuffers.Get().(*[]byte)
	defer func() {
		if cap(*buf) <= maxKeptBody {
			bodyBuffers.Put(buf)
		}
	}()
	body, err := readall.Into(*buf, http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes), min(r.ContentLength, s.cfg.MaxBodyBytes))
	*buf = body
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		fail(http.StatusRequestEntityTooLarge, "body larger than %d bytes", s.cfg.MaxBodyBytes)
		return
	}
	if err != nil {
		fail(http.StatusBadRequest, "reading body: %v", err)
		return
	}
	if ce := r.Header.Get("Content-Encoding"); !readableEncoding(ce) {
		fail(http.StatusBadRequest, "Content-Encoding %q: send the body gzipped (Content-Encoding: gzip) or uncompressed", ce)
		return
	}
	parts := uploadParts{data: body}
	if mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err == nil && mt == "multipart/form-data" {
		parts, err = multipartParts(body, params["boundary"])
		if err != nil {
			fail(http.StatusBadRequest, "multipart: %v", err)
			return
		}
	}
	if key == "" {
		key = contentKey(q, parts)
	}
	data, jfrLabels := parts.data, parts.labels
	windows, err := parseTaskWindows(parts.tasks)
	if err != nil {
		fail(http.StatusBadRequest, "%v", err)
		return
	}
	gcs, err := parseGCs(parts.gc)
	if err != nil {
		fail(http.StatusBadRequest, "%v", err)
		return
	}
	if jfrLabels != nil {
		if jfrLabels, err = format.Decompress(jfrLabels, "labels", s.cfg.MaxDecodedBytes); err != nil {
			fail(http.StatusUnprocessableEntity, "labels part: %v", err)
			return
		}
	}
	fmtName := formatFor(q.Get("format"))
	if fmtName == "folded" && q.Get("format") == "lines" {
		data = linesToFolded(data)
	}
	p, err := format.Decode(data, "upload", format.Options{Format: fmtName, MaxSize: s.cfg.MaxDecodedBytes, JFRLabels: jfrLabels})
	if err != nil {
		if errors.Is(err, format.ErrTooLarge) {
			fail(http.StatusRequestEntityTooLarge, "%v", err)
			return
		}
		fail(http.StatusUnprocessableEntity, "%v%s", err, encodingHint(r.Header.Get("Content-Encoding"), data))
		return
	}
	typeUntyped(p, nameType, q.Get("units"), sampleRate)
	p.Labels = p.Labels.Merge(labels)
	attributeTasks(p, windows)
	addGCs(p, gcs)
	if from == 0 {
		from = p.Start
	}
	if until == 0 {
		until = p.End
	}
	u := &store.Upload{From: from, Until: until, Labels: labels, Agent: q.Get("spyName"), Bytes: len(body), Profile: p, Key: key}
	if err := s.cfg.Store.Append(ten, u); errors.Is(err, store.ErrDuplicate) {
		s.replayed(w, who, ten, key, u.ID)
		return
	} else if err != nil {
		s.log.Error("store append failed", "tenant", ten, "err", err)
		fail(http.StatusServiceUnavailable, "storing the upload failed: %v", err)
		return
	}
	s.metrics.uploaded(len(body), len(p.Samples), time.Since(start))
	s.agents.uploaded(who, len(body), dropped, until)
	w.WriteHeader(http.StatusOK)
}

// bodyBuffers holds upload bodies' buffers between uploads: a fresh buffer
// costs its pages' faults on every upload. Nothing decoded from a body
// refers to its bytes.
var bodyBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxKeptBody bounds the buffers bodyBuffers keeps: a rare huge upload's is
// dropped.
const maxKeptBody = 16 << 20

// uploadParts are the parts of an upload: the profile, and those a
// multipart upload may add.
type uploadParts struct {
	data   []byte // the profile
	labels []byte // Pyroscope's LabelsSnapshot for a JFR's contexts
	tasks  []byte // the sparkprof agent's task windows
	gc     []byte // the sparkprof agent's garbage collections
}

// multipartParts returns the "jfr" (or first) part, the optional "labels"
// part of a Pyroscope multipart upload and the optional "tasks" and "gc"
// parts the sparkprof agent adds.
func multipartParts(body []byte, boundary string) (uploadParts, error) {
	var ps uploadParts
	if boundary == "" {
		return ps, errors.New("no boundary")
	}
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return ps, err
		}
		b, err := io.ReadAll(part)
		if err != nil {
			return ps, err
		}
		switch part.FormName() {
		case "labels":
			ps.labels = b
		case "tasks":
			ps.tasks = b
		case "gc":
			ps.gc = b
		case "jfr", "profile":
			ps.data = b
		default:
			if ps.data == nil {
				ps.data = b
			}
		}
	}
	if ps.data == nil {
		return ps, errors.New("no jfr part")
	}
	return ps, nil
}

// linesToFolded turns Pyroscope's "lines" format (one stack per line,
// each counting one sample) into folded stacks.
func linesToFolded(data []byte) []byte {
	var b bytes.Buffer
	for _, l := range bytes.Split(data, []byte("\n")) {
		if l = bytes.TrimSpace(l); len(l) > 0 {
			b.Write(l)
			b.WriteString(" 1\n")
		}
	}
	return b.Bytes()
}

// readableEncoding reports whether ingest reads a body of Content-Encoding
// ce: none, identity or gzip. A gzipped body is known by its magic bytes,
// whatever the header says, as the format package reads files.
func readableEncoding(ce string) bool {
	switch strings.ToLower(strings.TrimSpace(ce)) {
	case "", "identity", "gzip", "x-gzip":
		return true
	}
	return false
}

// encodingHint explains a body that failed to decode when its request said
// it was gzipped and it is not: the sender's header, not the profile, is
// likely wrong.
func encodingHint(ce string, data []byte) string {
	switch strings.ToLower(strings.TrimSpace(ce)) {
	case "gzip", "x-gzip":
		if !format.IsGzip(data) {
			return " (the request says Content-Encoding: gzip, but the body is not gzip data: send it gzipped, or without the header)"
		}
	}
	return ""
}
