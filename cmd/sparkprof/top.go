package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/sparkprof/sparkprof/profile"
)

func init() {
	register(&command{
		name:    "top",
		usage:   "[-n 20] [--sort self|total] [selection flags] PATH...",
		summary: "table of the functions with the most self and total samples",
		run:     runTop,
	})
}

func runTop(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "top")
	n := fs.Int("n", 20, "number of functions to list (0: all)")
	sortBy := fs.String("sort", "self", "order by self or total")
	var sel selection
	sel.register(fs)
	if err := parsePaths(fs, args); err != nil {
		return err
	}
	if *sortBy != "self" && *sortBy != "total" {
		return fmt.Errorf("%w: --sort %q: want self or total", errUsage, *sortBy)
	}
	p, err := sel.load(e, fs.Args())
	if err != nil {
		return err
	}
	t, err := sel.pickType(p)
	if err != nil {
		return err
	}
	tree := profile.NewTree(p, t)
	rows := tree.Top(0)
	if *sortBy == "total" {
		profile.SortByTotal(rows)
	}
	if *n > 0 && len(rows) > *n {
		rows = rows[:*n]
	}
	total := tree.Total()
	fmt.Fprintf(e.stdout, "%s, total %s\n", t, profile.FormatValue(total, t.Unit))
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "self\tself%\ttotal\ttotal%\t\tfunction")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\t%s\n",
			profile.FormatValue(r.Self, t.Unit), percent(r.Self, total),
			profile.FormatValue(r.Total, t.Unit), percent(r.Total, total), r.Name)
	}
	return tw.Flush()
}

func percent(v, total int64) string {
	if total == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", 100*float64(v)/float64(total))
}
