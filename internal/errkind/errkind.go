// Package errkind types the errors of sparkprof's engines (ingest, query)
// by what went wrong, so that each protocol adapter (HTTP, Connect) maps a
// kind to its status in one place, and the engines know no protocol.
package errkind

import (
	"errors"
	"fmt"
	"time"
)

// Kind is what went wrong.
type Kind int

// The kinds of errors.
const (
	// Internal is a failure of the server itself; errors without a kind
	// are internal.
	Internal Kind = iota
	// BadInput is a request or body that is not valid: a malformed
	// parameter, a profile that does not decode.
	BadInput
	// Unprocessable is a valid request the server cannot answer as asked:
	// a body in no format it reads, a selection too large to merge.
	Unprocessable
	// TooLarge is a body or decoded input past its size limit.
	TooLarge
	// OverLimit is a tenant past its rate: retry after a while.
	OverLimit
	// Unavailable is a server that cannot take the request now (its store
	// failed, or every turn is taken): retry.
	Unavailable
	// NotFound is a request for something the server does not hold.
	NotFound
)

// Error is an error of a kind, with how long to wait before a retry where
// one helps.
type Error struct {
	Kind       Kind
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the error of kind e.Kind.
func (e *Error) Unwrap() error { return e.Err }

// New returns err as an error of kind k.
func New(k Kind, err error) *Error { return &Error{Kind: k, Err: err} }

// Errorf formats an error of kind k, as fmt.Errorf does.
func Errorf(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Err: fmt.Errorf(format, args...)}
}

// Of returns the kind of err: that of the first *Error in its chain,
// Internal without one.
func Of(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}

// RetryAfter returns how long err says to wait before a retry, 0 when it
// does not say.
func RetryAfter(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}
