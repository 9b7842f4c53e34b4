package ingest

import (
	"fmt"
	"testing"
)

// Senders that only fail get rows up to a bound; senders that upload
// always do.
func TestSendersBound(t *testing.T) {
	a := newSenders()
	for i := range maxFailedAgents + 10 {
		a.Failed(Sender{Name: fmt.Sprint("bad", i)}, "broken")
	}
	if len(a.by) != maxFailedAgents {
		t.Errorf("%d rows after failures, want %d", len(a.by), maxFailedAgents)
	}
	a.Failed(Sender{Name: "bad0"}, "again")
	a.Uploaded(Sender{Name: "good"}, 10, 0, 0)
	if got := a.by["\x00bad0\x00\x00\x00"]; got == nil || got.Errors != 2 || len(a.by) != maxFailedAgents+1 {
		t.Errorf("an existing row must still count failures and an upload add one: %+v, %d rows", got, len(a.by))
	}
}
