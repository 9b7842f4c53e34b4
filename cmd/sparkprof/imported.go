package main

import (
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"

	"github.com/sparkprof/sparkprof/profile"
)

// importResult is what the server answers an import (ingest.Result): the
// app of an event log or container log, the labels of a profile.
type importResult struct {
	App *struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"app"`
	Duplicate bool            `json:"duplicate"`
	Labels    []profile.Label `json:"labels"`
}

// importedApps collects the applications an import filled: those analysed
// from event logs or container logs, by id with their names, and the
// services of profiles with no such app, by their selector.
type importedApps struct {
	apps     map[string]string // app id → name
	profiles map[string]string // selector → what it selects, as said
}

func (a *importedApps) add(res importResult) {
	if res.App != nil {
		if a.apps == nil {
			a.apps = map[string]string{}
		}
		a.apps[res.App.ID] = res.App.Name
		return
	}
	var app, service string
	for _, l := range res.Labels {
		switch l.Name {
		case profile.LabelAppID:
			app = l.Value
		case profile.LabelServiceName:
			service = l.Value
		}
	}
	if a.profiles == nil {
		a.profiles = map[string]string{}
	}
	switch {
	case app != "":
		a.profiles[selectorOf(profile.LabelAppID, app)] = app
	case service != "":
		a.profiles[selectorOf(profile.LabelServiceName, service)] = service
	}
}

// write says which applications the import filled and the web UI's page
// of each at server: an analysed app's page, else the flame graph of its
// profiles.
func (a *importedApps) write(w io.Writer, server string) {
	base := strings.TrimRight(server, "/") + "/#/"
	var lines []string
	for id, name := range a.apps {
		lines = append(lines, fmt.Sprintf("  %s %q: %sapps/%s", id, name, base, url.PathEscape(id)))
	}
	for sel, what := range a.profiles {
		if app, ok := strings.CutPrefix(sel, "{"+profile.LabelAppID+"="); ok {
			if _, analysed := a.apps[strings.Trim(strings.TrimSuffix(app, "}"), `"`)]; analysed {
				continue // its profiles are on its page
			}
		}
		lines = append(lines, fmt.Sprintf("  %s (profiles): %sflame?query=%s", what, base, url.QueryEscape(sel)))
	}
	if len(lines) == 0 {
		return
	}
	sort.Strings(lines)
	fmt.Fprintf(w, "applications and their pages:\n%s\n", strings.Join(lines, "\n"))
}

// selectorOf returns the selector of the samples whose label name has
// value, quoted as query.ParseSelector reads it.
func selectorOf(name, value string) string {
	return "{" + name + `="` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(value) + `"}`
}
