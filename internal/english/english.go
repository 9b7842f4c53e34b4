// Package english writes text for people: counts in words ("1 job", "3
// jobs"), durations and byte sizes ("1.5 s", "96.3 MiB"), and long text
// cut to fit.
package english

import "fmt"

// Plural returns n and noun, with an s unless n is 1.
func Plural(n int, noun string) string { return fmt.Sprintf("%d %s", n, Nouns(n, noun)) }

// Nouns returns noun, with an s unless n is 1.
func Nouns(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}

// Truncate cuts s to at most n characters, marking the cut with "…".
func Truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
