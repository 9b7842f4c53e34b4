package applog

import (
	"strings"
)

// maxPeriod is the longest block of different lines a repeated run may
// consist of.
const maxPeriod = 4

// repeatedRuns finds runs where a block of 1 to maxPeriod consecutive
// record patterns repeats at least twice (A A A, or A B A B A B), groups
// them by block and ranks them by the lines they cover. At each position
// the block covering the most lines wins, the shorter block on ties.
func repeatedRuns(seq []int32, keys, examples []string) []Chunk {
	chunks := map[string]*Chunk{}
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
			c = &Chunk{Pattern: pattern, Example: strings.Join(exs, "\n")}
			chunks[pattern] = c
			order = append(order, pattern)
		}
		c.Runs++
		c.Lines += bestLines
		i += bestLines
	}
	out := make([]Chunk, 0, len(order))
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
