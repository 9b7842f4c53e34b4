package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/ingest"
	"github.com/sparkprof/sparkprof/input"
	"github.com/sparkprof/sparkprof/internal/english"
	"github.com/sparkprof/sparkprof/server"
	"github.com/sparkprof/sparkprof/store"
)

// preloadPath is one value of serve's --preload: a path imported at start
// as `sparkprof import` would send it, with the app its container logs and
// profiles belong to (import's --app), if given.
type preloadPath struct {
	app, path string
}

// preloadFlag is serve's --preload, which may be given several times.
type preloadFlag []preloadPath

func (f *preloadFlag) String() string {
	var s []string
	for _, p := range *f {
		if p.app != "" {
			s = append(s, p.app+"="+p.path)
			continue
		}
		s = append(s, p.path)
	}
	return strings.Join(s, " ")
}

// Set takes [APP=]PATH. An "=" after a path separator is part of the path.
func (f *preloadFlag) Set(v string) error {
	p := preloadPath{path: v}
	if app, path, ok := strings.Cut(v, "="); ok && !strings.ContainsAny(app, `/\`) {
		if app == "" || path == "" {
			return fmt.Errorf("%q: want PATH or APP=PATH", v)
		}
		p = preloadPath{app: app, path: path}
	}
	*f = append(*f, p)
	return nil
}

// preloaded says what a preload did.
type preloaded struct {
	files    int      // imported
	already  int      // profiles the store held from an earlier start
	skipped  []string // files a directory walk passed over
	failures []error  // inputs that could not be imported
}

// preload imports what each path of paths holds into the default tenant,
// as `sparkprof import` sends it: a directory is walked as import walks it
// (input.Expand), a rolling event log goes as a zip, a container log
// directory as one text. Event logs and container logs are imported again,
// replacing the same files; a profile only when the store does not hold
// it yet, from an earlier start. An input that fails is counted and
// named; the others go on.
func preload(srv *server.Server, db *store.DB, paths []preloadPath) preloaded {
	var res preloaded
	stored := map[string]bool{}
	db.Select("", store.Query{}, func(u *store.Upload) error {
		if u.Profile != nil {
			stored[u.Profile.Source] = true
		}
		for _, src := range u.Sources {
			stored[src] = true
		}
		return nil
	})
	for _, p := range paths {
		sources, skipped, err := input.Expand([]string{p.path})
		if err == nil {
			var files []importFile
			if files, err = importFiles(sources); err == nil {
				res.skipped = append(res.skipped, skipped...)
				for _, f := range files {
					if f.kind == input.Profile && stored[f.path] {
						res.already++
						continue
					}
					if err := preloadFile(srv, f, p.app); err != nil {
						res.failures = append(res.failures, err)
						continue
					}
					res.files++
				}
				continue
			}
		}
		res.failures = append(res.failures, fmt.Errorf("--preload %s: %w", p.path, err))
	}
	return res
}

// preloadFile imports one input into the default tenant, its body read
// from disk as import would send it.
func preloadFile(srv *server.Server, f importFile, app string) error {
	var r io.Reader
	if f.write != nil {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(f.write(pw)) }()
		defer pr.Close()
		r = pr
	}
	var err error
	switch f.kind {
	case input.EventLog, input.Logs:
		if r == nil {
			fh, err := os.Open(f.path)
			if err != nil {
				return err
			}
			defer fh.Close()
			r = fh
		}
		if f.kind == input.EventLog {
			_, err = srv.Ingest().ImportEventLog("", f.path, r)
		} else {
			_, err = srv.Ingest().ImportLogs("", f.path, app, r, nil)
		}
	default:
		err = preloadProfile(srv, f.path, app)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", f.path, err)
	}
	return nil
}

// preloadProfile imports the profile at path, with the LabelsSnapshot
// beside it if any, named by its content as import names it.
func preloadProfile(srv *server.Server, path, app string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	imp := ingest.File{Name: path, Kind: input.Profile, App: app, Data: data}
	labels := format.LabelsBeside(path)
	if labels != "" {
		if imp.JFRLabels, err = os.ReadFile(labels); err != nil {
			return err
		}
	}
	if imp.Key, err = importKey(path, labels, app); err != nil {
		return err
	}
	_, err = srv.Ingest().Import("", imp)
	return err
}

// preloadAll preloads paths, saying what it does: the files passed over
// and the failures as warnings, the count of files preloaded to the
// operator (say).
func preloadAll(srv *server.Server, db *store.DB, paths preloadFlag, log *slog.Logger, say func(line, msg string, args ...any)) {
	what := paths.String()
	if len(paths) > 3 {
		what = english.Plural(len(paths), "path")
	}
	say("preloading "+what, "preloading", "paths", paths.String())
	res := preload(srv, db, paths)
	if len(res.skipped) > 0 {
		log.Warn("preload passed over files", "files", input.SkippedSummary("", res.skipped))
	}
	for _, err := range res.failures {
		log.Warn("preload failed", "err", err)
	}
	line := fmt.Sprintf("preloaded %d files", res.files)
	if res.already > 0 {
		line += fmt.Sprintf(" (and %d profiles stored at an earlier start)", res.already)
	}
	if len(res.failures) > 0 {
		line += fmt.Sprintf("; %d could not be read", len(res.failures))
	}
	say(line, "preloaded", "files", res.files, "already", res.already, "failed", len(res.failures))
}
