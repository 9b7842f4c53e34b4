package applog

import (
	"sort"
	"strings"

	"github.com/sparkprof/sparkprof/containerlog"
)

// maxPeriod is the longest block of different lines a repeated run may
// consist of.
const maxPeriod = 4

// repeatedRuns finds runs where a block of 1 to maxPeriod consecutive
// record patterns repeats at least twice (A A A, or A B A B A B), groups
// them by block and ranks them by the lines they cover. At each position
// the block covering the most lines wins, the shorter block on ties.
func repeatedRuns(seq []int32, keys, examples []string) []containerlog.Chunk {
	chunks := map[string]*containerlog.Chunk{}
	var order []string
	for i := 0; i < len(seq); {
		bestP, bestLines := 0, 0
		for p := 1; p <= maxPeriod && i+2*p <= len(seq); p++ {
			r := 0
			for j := i + p; j < len(seq) && seq[j] == seq[j-p]; j++ {
				r++
			}
			if r >= p && r+p > bestLines {
				bestP, bestLines = p, r+p
			}
		}
		if bestP == 0 {
			i++
			continue
		}
		block := seq[i : i+bestP]
		pats := make([]string, bestP)
		exs := make([]string, bestP)
		for k, id := range block {
			pats[k], exs[k] = keys[id], examples[id]
		}
		pattern := strings.Join(pats, "\n")
		c := chunks[pattern]
		if c == nil {
			c = &containerlog.Chunk{Pattern: pattern, Example: strings.Join(exs, "\n")}
			chunks[pattern] = c
			order = append(order, pattern)
		}
		c.Runs++
		c.Lines += bestLines
		i += bestLines
	}
	out := make([]containerlog.Chunk, 0, len(order))
	for _, p := range order {
		out = append(out, *chunks[p])
	}
	return out
}

// normalize replaces the variable parts of a message by "N" so that
// messages differing only in numbers, hex ids, timestamps, IPs or
// numbered host names compare equal: a word that is a 0x literal or at
// least 8 hex digits becomes N, and every other run of digits becomes N.
// It is hand-written because a regular expression made it the parser's
// hottest spot.
func normalize(s string) string {
	isAlnum := func(c byte) bool {
		return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	isHex := func(w string) bool {
		digit := false
		for i := 0; i < len(w); i++ {
			c := w[i]
			switch {
			case c >= '0' && c <= '9':
				digit = true
			case c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
			default:
				return false
			}
		}
		return digit
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		if !isAlnum(s[i]) {
			b.WriteByte(s[i])
			i++
			continue
		}
		j := i
		for j < len(s) && isAlnum(s[j]) {
			j++
		}
		w := s[i:j]
		if (len(w) > 2 && w[0] == '0' && (w[1] == 'x' || w[1] == 'X') && isHex(w[2:])) || (len(w) >= 8 && isHex(w)) {
			b.WriteByte('N')
		} else {
			for k := 0; k < len(w); {
				if w[k] >= '0' && w[k] <= '9' {
					for k < len(w) && w[k] >= '0' && w[k] <= '9' {
						k++
					}
					b.WriteByte('N')
					continue
				}
				b.WriteByte(w[k])
				k++
			}
		}
		i = j
	}
	return b.String()
}

// errorGroups groups WARN, ERROR and FATAL records by their normalised
// text, the lines that continue them (a stack trace) included.
type errorGroups struct {
	groups map[string]*containerlog.ErrorGroup // by key
	cur    *containerlog.ErrorGroup            // the record continuation lines go to
	text   strings.Builder                     // its text so far
}

// add ends the record before rec and starts rec, which continuation lines
// go to when it is a WARN, ERROR or FATAL record.
func (g *errorGroups) add(rec record) {
	g.flush()
	if rec.level == "WARN" || rec.level == "ERROR" || rec.level == "FATAL" {
		g.cur = &containerlog.ErrorGroup{Level: rec.level, Logger: rec.logger, First: rec.t, Last: rec.t}
		g.text.WriteString(rec.msg)
	}
}

// continued adds line, which has no record prefix, to the record it
// continues; it reports false when no record takes it.
func (g *errorGroups) continued(line string) bool {
	if g.cur == nil || line == "" {
		return false
	}
	g.text.WriteByte('\n')
	g.text.WriteString(line)
	return true
}

// flush counts the current record in its group.
func (g *errorGroups) flush() {
	if g.cur == nil {
		return
	}
	text := g.text.String()
	key := g.cur.Level + " " + g.cur.Logger + ": " + normalize(text)
	if grp, ok := g.groups[key]; ok {
		grp.Count++
		grp.Last = g.cur.Last
	} else {
		if g.groups == nil {
			g.groups = map[string]*containerlog.ErrorGroup{}
		}
		g.cur.Message, g.cur.Key, g.cur.Count = text, key, 1
		g.groups[key] = g.cur
	}
	g.cur = nil
	g.text.Reset()
}

// sorted counts the current record and returns the groups, the most
// recently seen first.
func (g *errorGroups) sorted() []containerlog.ErrorGroup {
	g.flush()
	var out []containerlog.ErrorGroup
	for _, grp := range g.groups {
		out = append(out, *grp)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.Last.Equal(b.Last) {
			return a.Last.After(b.Last)
		}
		return a.Key < b.Key
	})
	return out
}

// patternSeq is every record's normalised pattern, interned: 4 bytes a
// line, for finding repeated runs at the end.
type patternSeq struct {
	seq            []int32
	ids            map[string]int32 // by pattern
	keys, examples []string         // by id: the pattern and its first message
}

// add appends rec's pattern.
func (p *patternSeq) add(rec record) {
	key := rec.level + " " + rec.logger + ": " + normalize(rec.msg)
	id, ok := p.ids[key]
	if !ok {
		if p.ids == nil {
			p.ids = map[string]int32{}
		}
		id = int32(len(p.keys))
		p.ids[key] = id
		p.keys = append(p.keys, key)
		p.examples = append(p.examples, rec.msg)
	}
	p.seq = append(p.seq, id)
}

// chunks returns the repeated runs of the patterns (repeatedRuns), most
// lines first.
func (p *patternSeq) chunks() []containerlog.Chunk {
	out := repeatedRuns(p.seq, p.keys, p.examples)
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Lines != b.Lines {
			return a.Lines > b.Lines
		}
		return a.Pattern < b.Pattern
	})
	return out
}
