package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sparkprof/sparkprof/attribution"
	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/internal/english"
	"github.com/sparkprof/sparkprof/internal/errkind"
	"github.com/sparkprof/sparkprof/internal/pyroscope"
	"github.com/sparkprof/sparkprof/internal/unixtime"
	"github.com/sparkprof/sparkprof/profile"
)

// This file reads Pyroscope's ingest protocol (POST /ingest): the name
// with its labels, the query parameters and the body, plain, gzipped or
// multipart with the parts the Pyroscope Java agent and the sparkprof
// agent send.

// Pyroscope is an upload of Pyroscope's ingest protocol as its request
// carries it: the query parameters (name, from, until, spyName,
// sampleRate, units, format, dropped) and the body's Content-Type and
// Content-Encoding. It is the Protocol of Pipeline.Upload; Check reads its
// name and parameters.
type Pyroscope struct {
	Query           url.Values
	ContentType     string
	ContentEncoding string

	name   Name   // read by Check
	params Params // read by Check
}

// Sender returns who sent the upload: its labels are its name's, when the
// name parses.
func (u *Pyroscope) Sender(tenant, remote string) Sender {
	who := Sender{Tenant: tenant, Remote: remote, SpyName: u.Query.Get("spyName"), Name: u.Query.Get("name")}
	if name, err := ParseName(who.Name); err == nil {
		who.Labels = name.Labels
	}
	return who
}

// Check reads the upload's name and parameters (ParseName, ParseParams).
func (u *Pyroscope) Check() error {
	var err error
	if u.name, err = ParseName(u.Query.Get("name")); err != nil {
		return err
	}
	u.params, err = ParseParams(u.Query)
	return err
}

// Decode returns the profile of the upload whose body is body
// (ParseBody, PyroscopeProfile), with a hint for a body that says it is
// gzipped and is not (EncodingHint).
func (u *Pyroscope) Decode(body []byte, key string) (Profile, error) {
	parts, err := ParseBody(body, u.ContentType, u.ContentEncoding)
	if err != nil {
		return Profile{}, err
	}
	in, err := PyroscopeProfile(u.name, u.Query, u.params, parts, key)
	if err != nil {
		return Profile{}, err
	}
	in.Hint = EncodingHint(u.ContentEncoding, parts.Data)
	in.Dropped = u.params.Dropped
	return in, nil
}

// Name is what an upload's name says: its labels and the sample type its
// suffix names (zero without one).
type Name struct {
	Labels profile.Labels
	Type   profile.SampleType
}

// ParseName parses Pyroscope's "app.cpu{key=value,...}" into labels, and
// the sample type its suffix names. Errors are errkind.BadInput.
func ParseName(name string) (Name, error) {
	app, rest, hasLabels := strings.Cut(name, "{")
	app, typ := pyroscope.CutTypeSuffix(strings.TrimSpace(app))
	if app == "" {
		return Name{Type: typ}, errkind.Errorf(errkind.BadInput, "name %q: want app{key=value,...}", english.Truncate(name, 200))
	}
	ls := profile.Labels{{Name: profile.LabelServiceName, Value: app}}
	if hasLabels {
		body, ok := strings.CutSuffix(strings.TrimSpace(rest), "}")
		if !ok {
			return Name{Type: typ}, errkind.Errorf(errkind.BadInput, "name %q: labels do not end with }", english.Truncate(name, 200))
		}
		for _, kv := range strings.Split(body, ",") {
			if strings.TrimSpace(kv) == "" {
				continue
			}
			k, v, ok := strings.Cut(kv, "=")
			k, v = strings.TrimSpace(k), strings.Trim(strings.TrimSpace(v), `"`)
			if !ok || k == "" {
				return Name{Type: typ}, errkind.Errorf(errkind.BadInput, "name %q: label %q: want key=value", english.Truncate(name, 200), english.Truncate(kv, 100))
			}
			k = pyroscope.StandardLabel(k)
			if k == pyroscope.NameLabel {
				continue
			}
			ls = append(ls, profile.Label{Name: k, Value: v})
		}
	}
	ls = attribution.DriverExecutor(ls.Normalize())
	if err := checkLabels(ls); err != nil {
		return Name{Type: typ}, errkind.Errorf(errkind.BadInput, "name %q: %w", english.Truncate(name, 200), err)
	}
	return Name{Labels: ls, Type: typ}, nil
}

// Limits on an upload's labels, Pyroscope's defaults: a label set is a
// series of uploads, not a place for per-sample values.
const (
	maxUploadLabels    = 30
	maxLabelNameBytes  = 1024
	maxLabelValueBytes = 2048
)

// checkLabels reports an upload label set over the limits, or a label a
// query could not name or show (checkLabel).
func checkLabels(ls profile.Labels) error {
	if len(ls) > maxUploadLabels {
		return fmt.Errorf("%d labels, over the limit of %d: per-task and per-thread values belong in the profile (thread names, JFR contexts), not in the upload's labels", len(ls), maxUploadLabels)
	}
	for _, l := range ls {
		if err := checkLabel(l); err != nil {
			return err
		}
	}
	return nil
}

// checkLabel reports a label whose name a selector could not name
// (letters, digits, '_', '.' and '-' only), or whose value is not text:
// invalid UTF-8, control characters, or longer than the limit.
func checkLabel(l profile.Label) error {
	if l.Name == "" || len(l.Name) > maxLabelNameBytes || !allBytes(l.Name, &nameBytes) {
		return fmt.Errorf("label name %q: want 1 to %d letters, digits, '_', '.' or '-'", english.Truncate(l.Name, 100), maxLabelNameBytes)
	}
	if len(l.Value) > maxLabelValueBytes ||
		!allBytes(l.Value, &printableASCII) && (!utf8.ValidString(l.Value) || strings.IndexFunc(l.Value, unicode.IsControl) >= 0) {
		return fmt.Errorf("label %s: value %q of %d bytes: want text (valid UTF-8 without control characters) of at most %d bytes",
			l.Name, english.Truncate(l.Value, 100), len(l.Value), maxLabelValueBytes)
	}
	return nil
}

// nameBytes are the bytes of a label name; printableASCII, those of the
// values that need no further check, as nearly all do.
var nameBytes, printableASCII = func() (names, printable [256]bool) {
	for c := range 256 {
		names[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
		printable[c] = c >= ' ' && c < 0x7f
	}
	return names, printable
}()

// allBytes reports whether every byte of s is in set.
func allBytes(s string, set *[256]bool) bool {
	for i := 0; i < len(s); i++ {
		if !set[s[i]] {
			return false
		}
	}
	return true
}

// checkProfileLabels reports a label of p's samples, or of p itself, that
// checkLabel refuses: a JFR's contexts (its LabelsSnapshot) name them.
func checkProfileLabels(p *profile.Profile) error {
	for _, l := range p.Labels {
		if err := checkLabel(l); err != nil {
			return err
		}
	}
	for i := range p.NumLabelSets() {
		for _, l := range p.LabelSet(profile.LabelSetID(i)) {
			if err := checkLabel(l); err != nil {
				return err
			}
		}
	}
	return nil
}

// Params are an upload's query parameters besides its name.
type Params struct {
	// Dropped is the sparkprof agent's count of windows it dropped.
	Dropped int64
	// SampleRate is samples per second, defaultSampleRate when absent.
	SampleRate int64
	// From and Until bound the upload's window (Unix ns), 0 when absent.
	From, Until int64
}

// defaultSampleRate is the sampling rate, in Hz, Pyroscope assumes for an
// upload that does not give one.
const defaultSampleRate = 100

// ParseParams reads an upload's dropped, sampleRate, from and until.
// Errors are errkind.BadInput and name the parameter.
func ParseParams(q url.Values) (Params, error) {
	var ps Params
	var err error
	if ps.Dropped, err = parseCount(q.Get("dropped")); err != nil {
		return ps, errkind.Errorf(errkind.BadInput, "dropped: %w", err)
	}
	if ps.SampleRate, err = parseSampleRate(q.Get("sampleRate")); err != nil {
		return ps, errkind.New(errkind.BadInput, err)
	}
	if ps.From, err = unixtime.Parse(q.Get("from")); err != nil {
		return ps, errkind.Errorf(errkind.BadInput, "from: %w", err)
	}
	if ps.Until, err = unixtime.Parse(q.Get("until")); err != nil {
		return ps, errkind.Errorf(errkind.BadInput, "until: %w", err)
	}
	if ps.From != 0 && ps.Until != 0 && ps.Until < ps.From {
		return ps, errkind.Errorf(errkind.BadInput, "until %s is before from %s: the window ends before it starts", q.Get("until"), q.Get("from"))
	}
	return ps, nil
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

// Parts are the parts of an upload: the profile, and those a multipart
// upload may add.
type Parts struct {
	Data   []byte // the profile
	Labels []byte // Pyroscope's LabelsSnapshot for a JFR's contexts
	Tasks  []byte // the sparkprof agent's task runs
	GC     []byte // the sparkprof agent's garbage collections
}

// ParseBody splits an upload's body into its parts by its Content-Type
// (multipart/form-data, else the body is the profile), after checking its
// Content-Encoding. Errors are errkind.BadInput.
func ParseBody(body []byte, contentType, contentEncoding string) (Parts, error) {
	if !readableEncoding(contentEncoding) {
		return Parts{}, errkind.Errorf(errkind.BadInput, "Content-Encoding %q: send the body gzipped (Content-Encoding: gzip) or uncompressed", contentEncoding)
	}
	parts := Parts{Data: body}
	if mt, params, err := mime.ParseMediaType(contentType); err == nil && mt == "multipart/form-data" {
		if parts, err = multipartParts(body, params["boundary"]); err != nil {
			return parts, errkind.Errorf(errkind.BadInput, "multipart: %w", err)
		}
	}
	return parts, nil
}

// multipartParts returns the "jfr" (or first) part, the optional "labels"
// part of a Pyroscope multipart upload and the optional "tasks" and "gc"
// parts the sparkprof agent adds.
func multipartParts(body []byte, boundary string) (Parts, error) {
	var ps Parts
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
			ps.Labels = b
		case "tasks":
			ps.Tasks = b
		case "gc":
			ps.GC = b
		case "jfr", "profile":
			ps.Data = b
		default:
			if ps.Data == nil {
				ps.Data = b
			}
		}
	}
	if ps.Data == nil {
		return ps, errors.New("no jfr part")
	}
	return ps, nil
}

// PyroscopeProfile returns the profile of an upload to /ingest: its name, the
// query parameters q and its parts, with key as its upload key (the
// content's when the sender named none, ContentKey); the caller sets its
// Bytes. Errors are errkind.BadInput.
func PyroscopeProfile(name Name, q url.Values, ps Params, parts Parts, key string) (Profile, error) {
	runs, err := ParseTaskRuns(parts.Tasks)
	if err != nil {
		return Profile{}, errkind.New(errkind.BadInput, err)
	}
	gcs, err := ParseGCs(parts.GC)
	if err != nil {
		return Profile{}, errkind.New(errkind.BadInput, err)
	}
	if key == "" {
		key = ContentKey(q, parts)
	}
	data := parts.Data
	fmtName := formatFor(q.Get("format"))
	if fmtName == "folded" && q.Get("format") == "lines" {
		data = linesToFolded(data)
	}
	return Profile{
		Source: "upload", Format: fmtName, Data: data, JFRLabels: parts.Labels,
		Labels: name.Labels, NameType: name.Type, Units: q.Get("units"), SampleRate: ps.SampleRate,
		TaskRuns: runs, GCs: gcs, From: ps.From, Until: ps.Until,
		Agent: q.Get("spyName"), Key: key,
	}, nil
}

// formatFor maps Pyroscope's format parameter to a decoder name.
func formatFor(f string) string {
	switch f {
	case "jfr", "pprof", "speedscope", "chrometrace":
		return f
	}
	return "folded" // folded, lines, trie (unsupported) and anything else
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

// typeUntyped gives the samples of a format without types of its own
// (folded stacks, lines: counts of "samples") the type the upload's name
// suffix or units say, as Pyroscope reads them: a CPU or wall-clock count
// becomes time, each sample worth 1/sampleRate seconds. Profiles that carry
// their own types (JFR, pprof, ...) are left as they are.
func typeUntyped(p *profile.Profile, nameType profile.SampleType, units string, sampleRate int64) {
	if !untyped(p) {
		return
	}
	t := nameType
	if t == (profile.SampleType{}) {
		t = pyroscope.TypeOfUnits(units)
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

// untyped reports whether p is of a format without types of its own: its
// one type is a count of samples.
func untyped(p *profile.Profile) bool {
	return len(p.Types) == 1 && p.Types[0] == profile.TypeSamples
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

// EncodingHint explains a body that failed to decode when its request said
// it was gzipped and it is not: the sender's header, not the profile, is
// likely wrong.
func EncodingHint(contentEncoding string, data []byte) string {
	switch strings.ToLower(strings.TrimSpace(contentEncoding)) {
	case "gzip", "x-gzip":
		if !format.IsGzip(data) {
			return " (the request says Content-Encoding: gzip, but the body is not gzip data: send it gzipped, or without the header)"
		}
	}
	return ""
}
