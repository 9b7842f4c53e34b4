package main

import (
	"context"
	"fmt"
	"runtime/debug"
)

func init() {
	register(&command{
		name:    "version",
		summary: "print the sparkprof version",
		run: func(_ context.Context, e *env, args []string) error {
			fs := newFlagSet(e, "version")
			if err := fs.Parse(args); err != nil {
				return err
			}
			if fs.NArg() != 0 {
				return fmt.Errorf("%w: unexpected arguments %v", errUsage, fs.Args())
			}
			v := "devel"
			if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
				v = bi.Main.Version
			}
			fmt.Fprintln(e.stdout, "sparkprof", v)
			return nil
		},
	})
}
