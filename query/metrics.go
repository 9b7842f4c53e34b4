package query

import (
	"cmp"
	"slices"
	"strings"

	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store"
)

// MetricSeries returns the metric series of the uploads q selects whose
// labels match all of q's matchers (a label a series lacks matches as
// ""), and of name if given: points outside q's time range are left out,
// and the series of one metric and label set in several uploads are joined
// in time order.
func (e *Engine) MetricSeries(tenant string, q store.Query, name string) ([]profile.Series, error) {
	var out []profile.Series
	index := map[string]int{}
	err := e.store.Select(tenant, q, func(u *store.Upload) error {
		ss, err := u.LoadSeries()
		if err != nil {
			return err
		}
		for _, sr := range ss {
			if (name != "" && sr.Name != name) || !sr.Labels.Match(q.Matchers) {
				continue
			}
			key := sr.Name + "\x00" + sr.Unit + "\x00" + sr.Labels.String()
			i, ok := index[key]
			if !ok {
				i = len(out)
				index[key] = i
				out = append(out, profile.Series{Name: sr.Name, Unit: sr.Unit, Labels: sr.Labels})
			}
			for _, pt := range sr.Points {
				if (q.From == 0 || pt.Time >= q.From) && (q.Until == 0 || pt.Time < q.Until) {
					out[i].Points = append(out[i].Points, pt)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out = slices.DeleteFunc(out, func(sr profile.Series) bool { return len(sr.Points) == 0 })
	for i := range out {
		slices.SortStableFunc(out[i].Points, func(a, b profile.Point) int { return cmp.Compare(a.Time, b.Time) })
	}
	slices.SortFunc(out, func(a, b profile.Series) int {
		return strings.Compare(a.Name+"\x00"+a.Labels.String(), b.Name+"\x00"+b.Labels.String())
	})
	return out, nil
}
