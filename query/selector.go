package query

import (
	"fmt"
	"strings"

	"github.com/sparkprof/sparkprof/internal/pyroscope"
	"github.com/sparkprof/sparkprof/profile"
)

// ParseSelector parses `{name="v", other=~"re"}`, optionally prefixed with
// a Pyroscope profile type ID (`process_cpu:cpu:nanoseconds:cpu:nanoseconds{...}`,
// also as a __name__ or __profile_type__ matcher), which names a sample type, or with an app
// name as Pyroscope 0.x wrote queries (`app.cpu{...}`), whose suffix names
// one: typ (zero without one).
func ParseSelector(sel string) (ms []profile.Matcher, typ profile.SampleType, err error) {
	sel = strings.TrimSpace(sel)
	if sel == "" {
		return nil, typ, nil
	}
	name, rest, ok := strings.Cut(sel, "{")
	if name = strings.TrimSpace(name); name != "" {
		m, t, err := queryName(name)
		if err != nil {
			return nil, typ, err
		}
		if m != nil {
			ms = append(ms, *m)
		}
		typ = t
	}
	if !ok {
		return ms, typ, nil
	}
	body, ok := strings.CutSuffix(strings.TrimSpace(rest), "}")
	if !ok {
		return nil, typ, fmt.Errorf("selector %q: no closing }", sel)
	}
	for _, part := range splitOutsideQuotes(body) {
		if strings.TrimSpace(part) == "" {
			continue
		}
		m, err := profile.ParseMatcher(strings.TrimSpace(part))
		if err != nil {
			return nil, typ, fmt.Errorf("selector %q: %w", sel, err)
		}
		if m.Name == pyroscope.NameLabel || m.Name == pyroscope.TypeLabel {
			// Pyroscope's {__name__="process_cpu:cpu:nanoseconds:cpu:nanoseconds", ...},
			// or the same ID as __profile_type__, as Grafana's profiles app writes it
			if m.Op != profile.MatchEqual {
				return nil, typ, fmt.Errorf("selector %q: %s takes = only", sel, m.Name)
			}
			nm, t, err := queryName(m.Value)
			if err != nil {
				return nil, typ, err
			}
			if nm != nil {
				ms = append(ms, *nm)
			}
			typ = t
			continue
		}
		m.Name = pyroscope.StandardLabel(m.Name)
		ms = append(ms, m)
	}
	return ms, typ, nil
}

func splitOutsideQuotes(s string) []string {
	var out []string
	inQuote := false
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			inQuote = !inQuote
		case ',':
			if !inQuote {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// queryName reads the name before a selector's braces (or in its
// __name__ matcher): a Pyroscope profile type ID selects a sample type; an
// application name, as Pyroscope 0.x wrote queries (app.cpu), selects the
// service and, by its suffix, a sample type.
func queryName(name string) (*profile.Matcher, profile.SampleType, error) {
	if strings.Contains(name, ":") {
		t, err := pyroscope.TypeOfID(name)
		return nil, t, err
	}
	app, typ := pyroscope.CutTypeSuffix(name)
	m, err := profile.NewMatcher(profile.LabelServiceName, profile.MatchEqual, app)
	if err != nil {
		return nil, typ, err
	}
	return &m, typ, nil
}
