package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/sparkprof/sparkprof/format/folded"
	"github.com/sparkprof/sparkprof/format/pprof"
	"github.com/sparkprof/sparkprof/format/speedscope"
	"github.com/sparkprof/sparkprof/profile"
)

func init() {
	register(&command{
		name:    "convert",
		usage:   "--to folded|pprof|speedscope [-o FILE] [selection flags] PATH...",
		summary: "convert and merge profiles into folded stacks, pprof or speedscope JSON",
		run:     runConvert,
	})
}

func runConvert(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "convert")
	to := fs.String("to", "", "output format: folded, pprof or speedscope")
	out := fs.String("o", "-", "output file (- for stdout)")
	lines := fs.Bool("lines", false, "folded: append :line to frames with a line number (one frame per line, not per function)")
	header := fs.Bool("header", true, "folded: a first line naming the type and unit (# type=cpu unit=nanoseconds), which import and the other commands read; tools that want only stacks skip it")
	var sel selection
	sel.register(fs)
	if err := parsePaths(fs, args); err != nil {
		return err
	}
	var encode func(w io.Writer, p *profile.Profile, types []profile.SampleType) error
	switch *to {
	case "folded":
		encode = func(w io.Writer, p *profile.Profile, types []profile.SampleType) error {
			return folded.Encode(w, p, folded.EncodeOptions{Type: types[0], Lines: *lines, Header: *header})
		}
	case "pprof":
		encode = func(w io.Writer, p *profile.Profile, types []profile.SampleType) error {
			return pprof.Encode(w, p, pprof.EncodeOptions{Types: types})
		}
	case "speedscope":
		encode = func(w io.Writer, p *profile.Profile, types []profile.SampleType) error {
			return speedscope.Encode(w, p, speedscope.EncodeOptions{Types: types})
		}
	case "":
		return fmt.Errorf("%w: --to is required", errUsage)
	default:
		return fmt.Errorf("%w: --to %q: want folded, pprof or speedscope", errUsage, *to)
	}
	p, err := sel.load(e, fs.Args())
	if err != nil {
		return err
	}
	// Folded stacks hold one value per stack, so they take one type: the
	// one --type picks. The other formats keep every type unless --type
	// narrows them.
	var types []profile.SampleType
	if sel.typ != "" || *to == "folded" {
		t, err := sel.pickType(p)
		if err != nil {
			return err
		}
		types = []profile.SampleType{t}
	}
	if err := writeOutput(e, *out, func(w io.Writer) error { return encode(w, p, types) }); err != nil {
		return err
	}
	if *out != "-" && *out != "" {
		written := types
		if written == nil {
			written = p.Types
		}
		names := make([]string, len(written))
		for i, t := range written {
			names[i] = t.String()
		}
		fmt.Fprintf(e.stderr, "wrote %s (%s of %s)\n", *out, *to, strings.Join(names, ", "))
	}
	return nil
}
