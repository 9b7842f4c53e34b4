package pprof

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/google/pprof/driver"
	gprofile "github.com/google/pprof/profile"

	"github.com/sparkprof/sparkprof/profile"
)

// EncodeDOT writes the samples of type t of p as a Graphviz DOT call graph
// of its nodes heaviest functions, drawn by google/pprof's own report
// generator, as `go tool pprof -dot -nodecount=nodes` draws it.
func EncodeDOT(w io.Writer, p *profile.Profile, t profile.SampleType, nodes int) error {
	var raw bytes.Buffer
	if err := Encode(&raw, p, EncodeOptions{Types: []profile.SampleType{t}}); err != nil {
		return err
	}
	gp, err := gprofile.Parse(&raw)
	if err != nil {
		return fmt.Errorf("pprof: reading the profile back: %w", err)
	}
	var out dotWriter
	err = driver.PProf(&driver.Options{
		Flagset: newDriverFlags("-dot", "-nodecount="+strconv.Itoa(max(1, nodes)), "-symbolize=none", "-output=graph.dot", "sparkprof"),
		Fetch:   profileFetcher{gp},
		Writer:  &out,
		UI:      quietUI{},
	})
	if err != nil {
		return fmt.Errorf("pprof: drawing the graph: %w", err)
	}
	_, err = w.Write(out.buf.Bytes())
	return err
}

// The google/pprof driver takes its inputs through interfaces made for
// its command line: the flags below are its arguments, the fetcher hands it
// the profile, the writer keeps its output, and the UI keeps it quiet.

// driverFlags implements driver.FlagSet over a flag.FlagSet with fixed
// arguments.
type driverFlags struct {
	*flag.FlagSet
	args  []string
	extra string
}

func newDriverFlags(args ...string) *driverFlags {
	fs := flag.NewFlagSet("pprof", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &driverFlags{FlagSet: fs, args: args}
}

func (f *driverFlags) StringList(name, def, usage string) *[]*string {
	return &[]*string{f.String(name, def, usage)}
}

func (f *driverFlags) ExtraUsage() string      { return f.extra }
func (f *driverFlags) AddExtraUsage(eu string) { f.extra += eu }
func (f *driverFlags) Parse(usage func()) []string {
	if err := f.FlagSet.Parse(f.args); err != nil {
		usage()
		return nil
	}
	return f.Args()
}

// profileFetcher hands the driver a profile already in memory.
type profileFetcher struct{ p *gprofile.Profile }

func (f profileFetcher) Fetch(string, time.Duration, time.Duration) (*gprofile.Profile, string, error) {
	return f.p, "", nil
}

// dotWriter keeps what the driver writes.
type dotWriter struct{ buf bytes.Buffer }

func (d *dotWriter) Open(string) (io.WriteCloser, error) { return d, nil }
func (d *dotWriter) Write(b []byte) (int, error)         { return d.buf.Write(b) }
func (d *dotWriter) Close() error                        { return nil }

// quietUI keeps the driver's messages ("Generating report in ...") to
// itself; what fails comes back as the driver's error.
type quietUI struct{}

func (quietUI) ReadLine(string) (string, error)     { return "", io.EOF }
func (quietUI) Print(...any)                        {}
func (quietUI) PrintErr(...any)                     {}
func (quietUI) IsTerminal() bool                    { return false }
func (quietUI) WantBrowser() bool                   { return false }
func (quietUI) SetAutoComplete(func(string) string) {}
