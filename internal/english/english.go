// Package english words counts for people: "1 job", "3 jobs".
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
