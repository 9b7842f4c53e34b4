// Command sparkprof is the Spark profiler: it reads profiles, Spark event
// logs and container logs, renders flame graphs and reports, and serves
// them to a web UI.
//
// Each subcommand lives in its own file and registers itself in init.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// command is one sparkprof subcommand.
type command struct {
	name    string
	usage   string // argument synopsis, e.g. "[-o out.html] PATH..."
	summary string // one line for `sparkprof help`
	// run executes the command with its arguments (after the name).
	run func(ctx context.Context, env *env, args []string) error
}

// env is what a command may touch of the outside world.
type env struct {
	stdout, stderr io.Writer
}

var commands = map[string]*command{}

func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("sparkprof: command registered twice: " + c.name)
	}
	commands[c.name] = c
}

// errUsage marks an error caused by how the command was called.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, &env{stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(code)
}

// run dispatches args to a subcommand and returns the exit code.
func run(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			if c, ok := commands[args[1]]; ok {
				// The command's own -h prints its usage and flags.
				c.run(ctx, &env{stdout: e.stdout, stderr: e.stdout}, []string{"-h"})
				return 0
			}
		}
		printHelp(e.stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = []string{"version"}
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "sparkprof: unknown command %q; run 'sparkprof help' for the list\n", args[0])
		return 2
	}
	if err := c.run(ctx, e, args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(e.stderr, "sparkprof %s: %v\n", c.name, err)
		if errors.Is(err, errUsage) {
			fmt.Fprintf(e.stderr, "usage: sparkprof %s %s\n", c.name, c.usage)
			return 2
		}
		return 1
	}
	return 0
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "sparkprof: the Spark profiler\n\nusage: sparkprof <command> [arguments]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'sparkprof help <command>' for a command's usage.")
}

// newFlagSet returns a flag set for command c that reports errors to e.
// parsePaths parses the flags of a command whose arguments are input paths,
// of which it needs at least one.
func parsePaths(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: no input paths", errUsage)
	}
	return nil
}

func newFlagSet(e *env, c string) *flag.FlagSet {
	fs := flag.NewFlagSet("sparkprof "+c, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		if cmd, ok := commands[c]; ok {
			fmt.Fprintf(fs.Output(), "usage: %s\n\n%s\n", strings.TrimSpace("sparkprof "+cmd.name+" "+cmd.usage), cmd.summary)
		}
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintf(fs.Output(), "\nflags:\n")
			fs.PrintDefaults()
		}
	}
	return fs
}
