package profile

import (
	"fmt"
	"strings"
)

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
