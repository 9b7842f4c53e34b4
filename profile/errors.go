package profile

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrValueRange is wrapped by the errors of input that is well formed but
// holds a value no profile should: a count so large that its sums would
// lose precision or overflow.
var ErrValueRange = errors.New("out of range")

// DecodeError reports input a decoder could not read: which file, where in
// it, what was expected and, when known, how to fix it.
type DecodeError struct {
	Source string // file name or other origin
	Offset int64  // byte offset, or -1 when unknown
	Line   int    // 1-based line for text formats, or 0
	Field  string // the field being read, if any
	Msg    string // what was wrong or expected
	Err    error  // underlying error, if any
}

// Error formats the error as one line: "file:line: field: msg: err".
func (e *DecodeError) Error() string {
	var b strings.Builder
	b.WriteString(e.Source)
	switch {
	case e.Line > 0:
		fmt.Fprintf(&b, ":%d", e.Line)
	case e.Offset >= 0:
		fmt.Fprintf(&b, ": offset %d", e.Offset)
	}
	if e.Field != "" {
		b.WriteString(": ")
		b.WriteString(e.Field)
	}
	if e.Msg != "" {
		b.WriteString(": ")
		b.WriteString(e.Msg)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *DecodeError) Unwrap() error { return e.Err }

// maxLineWarnings bounds the warnings BadLines adds to a profile, one a
// line; the lines past it are counted in one more.
const maxLineWarnings = 100

// BadLines collects the lines of a line-oriented input (JSON records, one
// a line) that a decoder skipped because it could not read them: the first
// as a *DecodeError, the first hundred as warnings of the profile, the rest
// as a count.
type BadLines struct {
	Source string // the input's name, for the error
	first  *DecodeError
	n      int
}

// Add records that line (1-based) could not be read because of err, and
// warns of it in p.
func (b *BadLines) Add(p *Profile, line int, err error) {
	b.n++
	if b.first == nil {
		b.first = &DecodeError{Source: b.Source, Offset: -1, Line: line, Msg: err.Error()}
	}
	if b.n <= maxLineWarnings {
		p.Warnf("line %d: %v", line, err)
	}
}

// Finish warns in p of the bad lines Add did not warn of, and returns the
// first bad line's error, or nil when there was none.
func (b *BadLines) Finish(p *Profile) error {
	if b.n > maxLineWarnings {
		p.Warnf("%d more bad lines not shown", b.n-maxLineWarnings)
	}
	if b.first == nil {
		return nil
	}
	return b.first
}

// JSONError is the DecodeError of a JSON document that encoding/json could
// not read, err, with the byte offset and the field it names.
func JSONError(source, msg string, err error) *DecodeError {
	de := &DecodeError{Source: source, Offset: -1, Msg: msg, Err: err}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		de.Offset = se.Offset
	case errors.As(err, &te):
		de.Offset, de.Field = te.Offset, te.Field
	}
	return de
}
