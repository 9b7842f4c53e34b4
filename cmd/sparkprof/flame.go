package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/sparkprof/sparkprof/flamegraph"
	"github.com/sparkprof/sparkprof/profile"
)

func init() {
	register(&command{
		name:    "flame",
		usage:   "[-o out.html|out.svg] [--type cpu|wall|alloc|lock] [--stage N] [--thread REGEX] [selection flags] PATH...",
		summary: "render profiles as an interactive HTML or SVG flame graph",
		run:     runFlame,
	})
}

func runFlame(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "flame")
	out := fs.String("o", "flame.html", "output file: .html (interactive, self-contained) or .svg")
	title := fs.String("title", "", "title shown above the graph (default: the inputs)")
	var sel selection
	sel.register(fs)
	if err := parsePaths(fs, args); err != nil {
		return err
	}
	svg, err := outputKind(*out)
	if err != nil {
		return err
	}
	p, err := sel.load(e, fs.Args())
	if err != nil {
		return err
	}
	t, err := sel.pickType(p)
	if err != nil {
		return err
	}
	opts := flamegraph.Options{Title: *title, Type: t.String()}
	if opts.Title == "" {
		opts.Title = inputsTitle(fs.Args())
	}
	err = writeOutput(e, *out, func(w io.Writer) error {
		if svg {
			return flamegraph.SVG(w, profile.NewTree(p, t), opts)
		}
		return flamegraph.HTML(w, p, opts)
	})
	if err != nil {
		return err
	}
	if *out != "-" {
		fmt.Fprintf(e.stderr, "wrote %s (%s, total %s)\n", *out, t, profile.FormatValue(p.Total(typeID(p, t)), t.Unit))
	}
	return nil
}

// outputKind tells an SVG output path from an HTML one.
func outputKind(path string) (svg bool, err error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg":
		return true, nil
	case ".html", ".htm", "":
		return false, nil
	}
	return false, fmt.Errorf("%w: -o %s: want a .html or .svg file", errUsage, path)
}

// inputsTitle names a set of inputs for a title.
func inputsTitle(paths []string) string {
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = filepath.Base(p)
	}
	if len(names) > 3 {
		names = append(names[:3], fmt.Sprintf("and %d more", len(paths)-3))
	}
	return strings.Join(names, ", ")
}

// typeID returns the index of t in p, which must have it.
func typeID(p *profile.Profile, t profile.SampleType) profile.TypeID {
	id, _ := p.TypeIndex(t)
	return id
}
