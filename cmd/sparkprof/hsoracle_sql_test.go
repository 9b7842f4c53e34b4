package main

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// compareSQLNodes compares the operators of a SQL execution's plan graph,
// as the History Server's SQL REST answer lists them (nodes), with the
// operators of sparkprof's plan, node by node (by the graph's node id)
// and metric by metric: each value the History Server shows, parsed into
// its parts (total, min, med, max, the task of the max), against
// sparkprof's numbers written with the History Server's units and
// rounding.
func compareSQLNodes(tally hsTally, where string, hs, sp jsonObj) {
	ours := map[string]jsonObj{}
	var walk func(n jsonObj)
	walk = func(n jsonObj) {
		if id := jsonInt(n["nodeId"]); id >= 0 {
			ours[strconv.FormatInt(id, 10)] = n
		}
		children, _ := n["children"].([]any)
		for _, c := range children {
			walk(c.(jsonObj))
		}
	}
	if plan, ok := sp["plan"].(jsonObj); ok {
		walk(plan)
	}
	nodes, _ := hs["nodes"].([]any)
	theirs := map[string]jsonObj{}
	for _, n := range nodes {
		n := n.(jsonObj)
		theirs[hsNorm(n["nodeId"])] = n
	}
	tally.compareValue("sql.nodes (ids)", where, sortedKeys(theirs), sortedKeys(ours))
	for id, h := range theirs {
		o, ok := ours[id]
		if !ok {
			continue
		}
		at := where + " node " + id
		tally.compareValue("sql.nodes.nodeName", at, strings.TrimSpace(hsNorm(h["nodeName"])), strings.TrimSpace(hsNorm(o["name"])))
		known := map[string]jsonObj{}
		var names []string
		metrics, _ := o["metrics"].([]any)
		for _, m := range metrics {
			m := m.(jsonObj)
			if m["known"] == true {
				name := strings.TrimSpace(m["name"].(string))
				known[name] = m
				names = append(names, name)
			}
		}
		var hsNames []string
		hsMetrics, _ := h["metrics"].([]any)
		for _, m := range hsMetrics {
			m := m.(jsonObj)
			name := m["name"].(string)
			hsNames = append(hsNames, name)
			if o, ok := known[name]; ok {
				compareSQLMetric(tally, at+" "+name, m["value"].(string), o)
			}
		}
		tally.compareValue("sql.nodes.metrics (names)", at, strings.Join(hsNames, ", "), strings.Join(names, ", "))
	}
}

// sqlValue is a SQL metric's value as the History Server's SQL page
// writes it, in parts.
type sqlValue struct{ total, min, med, max, maxAt string }

// sqlStatsText reads the parts of a History Server metric value: "1,234";
// "12 ms"; "total (min, med, max (stageId: taskId))\n10.0 MiB (1.0 MiB,
// 2.0 MiB, 3.0 MiB (stage 2.0: task 7))"; an average's
// "(min, med, max (stageId: taskId)):\n(1.2, 2.5, 3 (driver))".
var sqlStatsText = regexp.MustCompile(`^(?:total )?\(min, med, max \(stageId: taskId\)\):?\n(.*?) ?\((.+), (.+), (.+) \((driver|stage [0-9]+\.[0-9]+: task [0-9]+)\)\)$`)

func parseSQLValue(s string) sqlValue {
	s = strings.TrimPrefix(s, "\n")
	m := sqlStatsText.FindStringSubmatch(s)
	if m == nil {
		return sqlValue{total: s}
	}
	return sqlValue{total: m[1], min: m[2], med: m[3], max: m[4], maxAt: m[5]}
}

// ourSQLValue writes sparkprof's numbers of a metric in parts, with the
// History Server's units and rounding.
func ourSQLValue(m jsonObj) sqlValue {
	typ, _ := m["type"].(string)
	format := func(v int64) string { return hsMetricText(typ, v) }
	total, n := jsonInt(m["total"]), jsonInt(m["values"])
	if typ == "sum" || n <= 1 {
		return sqlValue{total: format(total)}
	}
	v := sqlValue{min: format(jsonInt(m["min"])), med: format(jsonInt(m["med"])), max: format(jsonInt(m["max"])), maxAt: "driver"}
	if typ != "average" {
		v.total = format(total)
	}
	if at, ok := m["maxAt"].(jsonObj); ok {
		v.maxAt = fmt.Sprintf("stage %d.%d: task %d", jsonInt(at["stageId"]), jsonInt(at["stageAttempt"]), jsonInt(at["taskId"]))
	}
	return v
}

// compareSQLMetric counts one metric value's parts.
func compareSQLMetric(tally hsTally, where, hsText string, ours jsonObj) {
	h, o := parseSQLValue(hsText), ourSQLValue(ours)
	field := "sql.nodes.metrics.value"
	tally.compareValue(field+" (total)", where, h.total, o.total)
	if h.min != "" || o.min != "" {
		tally.compareValue(field+" (min, med, max)", where, []any{h.min, h.med, h.max}, []any{o.min, o.med, o.max})
		tally.compareValue(field+" (task of max)", where, h.maxAt, o.maxAt)
	}
	tally.compareValue(field, where, strings.TrimPrefix(hsText, "\n"), o.text())
}

// text writes v as the History Server's SQL page does.
func (v sqlValue) text() string {
	switch {
	case v.min == "":
		return v.total
	case v.total == "":
		return fmt.Sprintf("(min, med, max (stageId: taskId)):\n(%s, %s, %s (%s))", v.min, v.med, v.max, v.maxAt)
	}
	return fmt.Sprintf("total (min, med, max (stageId: taskId))\n%s (%s, %s, %s (%s))", v.total, v.min, v.med, v.max, v.maxAt)
}

// hsMetricText writes a metric's value as Spark's SQLMetrics does: a
// count with US digit grouping, a size in binary units with one decimal,
// a time in ms, s, m or h, an average in tenths.
func hsMetricText(typ string, v int64) string {
	switch typ {
	case "size":
		return hsBytes(v)
	case "timing":
		return hsDuration(v)
	case "nsTiming":
		return hsDuration(v / 1e6)
	case "average":
		r := new(big.Rat).SetFrac64(v, 10)
		s := strings.TrimRight(strings.TrimRight(r.FloatString(3), "0"), ".")
		return groupDigits(s)
	}
	return groupDigits(strconv.FormatInt(v, 10))
}

// groupDigits puts US thousands separators into a decimal number.
func groupDigits(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	whole, frac, dot := strings.Cut(s, ".")
	var b strings.Builder
	for i, c := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if dot {
		return sign + b.String() + "." + frac
	}
	return sign + b.String()
}

// hsBytes is Spark's Utils.bytesToString: the largest binary unit of
// which the size is at least 2, one decimal rounded half up.
func hsBytes(size int64) string {
	units := []string{"EiB", "PiB", "TiB", "GiB", "MiB", "KiB"}
	for i, u := range units {
		unit := int64(1) << (10 * (6 - i))
		if size >= 2*unit {
			r := new(big.Rat).SetFrac64(size, unit)
			return halfUp(r, 1) + " " + u
		}
	}
	return halfUp(new(big.Rat).SetInt64(size), 1) + " B"
}

// halfUp writes r with digits decimals, rounded half up.
func halfUp(r *big.Rat, digits int) string {
	scale := new(big.Rat).SetInt64(int64(math.Pow10(digits)))
	x := new(big.Rat).Mul(r, scale)
	x.Add(x, big.NewRat(1, 2))
	q := new(big.Int).Div(x.Num(), x.Denom())
	s := q.String()
	for len(s) <= digits {
		s = "0" + s
	}
	return s[:len(s)-digits] + "." + s[len(s)-digits:]
}

// hsDuration is Spark's Utils.msDurationToString: ms below a second, then
// s and m with one decimal, h with two, of a float.
func hsDuration(ms int64) string {
	switch {
	case ms < 1000:
		return fmt.Sprintf("%d ms", ms)
	case ms < 60*1000:
		return javaFloat(float32(ms)/1000, 1) + " s"
	case ms < 3600*1000:
		return javaFloat(float32(ms)/60000, 1) + " m"
	}
	return javaFloat(float32(ms)/3600000, 2) + " h"
}

// javaFloat writes a float as Java's Formatter does with %.Nf: the
// shortest decimal of the value widened to double, rounded half up.
func javaFloat(f float32, digits int) string {
	r, _ := new(big.Rat).SetString(strconv.FormatFloat(float64(f), 'f', -1, 64))
	return halfUp(r, digits)
}

// TestHSMetricText checks the writing of metric values against values the
// History Server's SQL page shows.
func TestHSMetricText(t *testing.T) {
	for _, tc := range []struct {
		typ  string
		v    int64
		want string
	}{
		{"sum", 1234567, "1,234,567"},
		{"size", 2047, "2047.0 B"},
		{"size", 2048, "2.0 KiB"},
		{"size", 10 << 20, "10.0 MiB"},
		{"size", 1572864 * 3, "4.5 MiB"},
		{"timing", 999, "999 ms"},
		{"timing", 1250, "1.3 s"},
		{"timing", 90000, "1.5 m"},
		{"timing", 5400000, "1.50 h"},
		{"nsTiming", 32402787, "32 ms"},
		{"average", 15, "1.5"},
		{"average", 12340, "1,234"},
	} {
		if got := hsMetricText(tc.typ, tc.v); got != tc.want {
			t.Errorf("hsMetricText(%s, %d) = %q, want %q", tc.typ, tc.v, got, tc.want)
		}
	}
}
