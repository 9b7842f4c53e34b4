package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/sparkprof/sparkprof/flamegraph"
	"github.com/sparkprof/sparkprof/profile"
)

func init() {
	register(&command{
		name:    "diff",
		usage:   "[-o diff.html|diff.svg] [--type cpu|wall|alloc|lock] [selection flags] BASE NEW",
		summary: "differential flame graph of two profiles: red grew, blue shrank (totals normalised)",
		run:     runDiff,
	})
}

func runDiff(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "diff")
	out := fs.String("o", "diff.html", "output file: .html (interactive, self-contained) or .svg")
	title := fs.String("title", "", "title shown above the graph")
	var sel selection
	sel.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return fmt.Errorf("%w: want two inputs, BASE and NEW (files or directories), got %d", errUsage, fs.NArg())
	}
	svg, err := outputKind(*out)
	if err != nil {
		return err
	}
	base, err := sel.load(e, fs.Args()[:1])
	if err != nil {
		return fmt.Errorf("base: %w", err)
	}
	next, err := sel.load(e, fs.Args()[1:])
	if err != nil {
		return fmt.Errorf("new: %w", err)
	}
	t, err := sel.pickType(next)
	if err != nil {
		return err
	}
	if _, ok := base.TypeIndex(t); !ok {
		return fmt.Errorf("base %s has no %s samples", fs.Arg(0), t)
	}
	opts := flamegraph.Options{Title: *title, Type: t.String()}
	if opts.Title == "" {
		a, b := diffTitles(fs.Arg(0), fs.Arg(1))
		opts.Title = a + " vs " + b
	}
	err = writeOutput(e, *out, func(w io.Writer) error {
		if svg {
			return flamegraph.SVG(w, profile.Diff(base, next, t), opts)
		}
		return flamegraph.DiffHTML(w, base, next, opts)
	})
	if err != nil {
		return err
	}
	if *out != "-" {
		id := typeID(base, t)
		fmt.Fprintf(e.stderr, "wrote %s (%s, base total %s, new total %s)\n", *out, t,
			profile.FormatValue(base.Total(id), t.Unit), profile.FormatValue(next.Total(typeID(next, t)), t.Unit))
	}
	return nil
}

// diffTitles names the two sides of a diff by their file names, with as
// many of their directories as tell them apart (two runs' Stacktrace.json
// files, say).
func diffTitles(base, next string) (string, string) {
	a, b := filepath.Base(base), filepath.Base(next)
	da, db := filepath.Dir(base), filepath.Dir(next)
	for a == b && (da != filepath.Dir(da) || db != filepath.Dir(db)) {
		a, b = filepath.Join(filepath.Base(da), a), filepath.Join(filepath.Base(db), b)
		da, db = filepath.Dir(da), filepath.Dir(db)
	}
	return a, b
}
