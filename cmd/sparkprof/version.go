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
		run: func(_ context.Context, e *env, _ []string) error {
			v := "devel"
			if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
				v = bi.Main.Version
			}
			fmt.Fprintln(e.stdout, "sparkprof", v)
			return nil
		},
	})
}
