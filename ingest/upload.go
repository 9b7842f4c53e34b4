package ingest

import (
	"context"
	"io"
	"mime"
	"time"

	"github.com/sparkprof/sparkprof/internal/errkind"
	"github.com/sparkprof/sparkprof/store"
)

// Request is one upload as an entry point hands it to the pipeline: who
// sent it, its key, its body still to be read and the protocol that reads
// it. Pipeline.Upload takes it in one call.
type Request struct {
	Tenant string
	// Remote is where the upload came from: the sender's address.
	Remote string
	// Key is the sender's Idempotency-Key as sent, "" for none.
	Key string
	// Body is the upload's body, read whole before the upload takes a
	// turn; Size is the size the sender announced (-1 for none), MaxBytes
	// the most that is read.
	Body     io.Reader
	Size     int64
	MaxBytes int64
	// Protocol reads what the request says and the profile in its body.
	Protocol Protocol
}

// A Protocol is what a way of sending uploads decides of one: who sent
// it, what its request says besides its body, and the profile its body
// holds.
type Protocol interface {
	// Sender returns who sent the upload, for the agents list.
	Sender(tenant, remote string) Sender
	// Check reads what the request says besides its body, before the body
	// is read. Errors are errkind.BadInput.
	Check() error
	// Decode returns the profile in body, with key as its upload key ("" for
	// none). It runs in the upload's turn.
	Decode(body []byte, key string) (Profile, error)
}

// Upload takes one upload in the order every upload is taken: what its
// request says (Protocol.Check), its tenant's rate (Allow), its key, a
// retry of an upload stored under it answered before the body is read,
// a store behind refused before it too, the body (ReadBody), a turn
// (Turn), and the profile decoded and stored (Ingest). The sender is counted in the agents list as the upload ends:
// stored, retried or failed. Errors are typed (errkind).
func (p *Pipeline) Upload(ctx context.Context, r Request) (Stored, error) {
	who := r.Protocol.Sender(r.Tenant, r.Remote)
	st, dropped, err := p.upload(ctx, r, time.Now())
	switch {
	case err != nil:
		p.senders.Failed(who, err.Error())
	case st.Duplicate:
		p.senders.Retried(who)
	default:
		p.senders.Uploaded(who, st.Upload.Bytes, dropped, st.Upload.Until)
	}
	return st, err
}

// upload is Upload but for the agents list; it returns the windows the
// sender said it dropped besides what it stored.
func (p *Pipeline) upload(ctx context.Context, r Request, arrived time.Time) (st Stored, dropped int64, err error) {
	if err := r.Protocol.Check(); err != nil {
		return Stored{}, 0, err
	}
	if err := p.Allow(r.Tenant); err != nil {
		return Stored{}, 0, err
	}
	key, err := ParseKey(r.Key)
	if err != nil {
		return Stored{}, 0, err
	}
	if id, ok := p.KeyStored(r.Tenant, key); ok {
		return Stored{Upload: &store.Upload{ID: id}, Duplicate: true}, 0, nil
	}
	err = p.receive(ctx, r, func(body *Body) error {
		in, err := r.Protocol.Decode(body.Data, key)
		if err != nil {
			return err
		}
		in.Bytes, in.Body = len(body.Data), body
		dropped = in.Dropped
		st, err = p.Ingest(r.Tenant, in, arrived)
		return err
	})
	return st, dropped, err
}

// receive reads r's body, then takes a turn, and calls fn with the body
// in its turn: the body first, so that a sender that sends slowly holds
// memory it sent, not a turn others wait for. The body is freed when fn
// returns. A store behind refuses before the body is read.
func (p *Pipeline) receive(ctx context.Context, r Request, fn func(*Body) error) error {
	if err := p.behind(); err != nil {
		return err
	}
	body, err := p.ReadBody(r.Body, r.Size, r.MaxBytes)
	if err != nil {
		return err
	}
	defer body.Free()
	release, err := p.Turn(ctx)
	if err != nil {
		return err
	}
	defer release()
	return fn(body)
}

// ImportFile imports file f, sent whole as r's body, in one call: a
// profile is answered before its body is read when it was stored under
// its key; an event log or container logs stream to the app store (Import
// Event Log, ImportLogs); a profile's body is read, and in its turn split
// when it is multipart (a JFR with its LabelsSnapshot, as Pyroscope's
// agent sends them) and imported (Import), its sender counted in the
// agents list. r.Protocol is not used: the file's kind decides.
func (p *Pipeline) ImportFile(ctx context.Context, r Request, f File) (*Result, error) {
	var err error
	if f.Key, err = ParseKey(r.Key); err != nil {
		return nil, err
	}
	switch f.Kind {
	case "eventlog":
		return p.ImportEventLog(r.Tenant, f.Name, r.Body)
	case "logs":
		return p.ImportLogs(r.Tenant, f.Name, f.App, r.Body, nil)
	case "", "profile":
	default:
		return nil, errkind.Errorf(errkind.BadInput, "kind %q: want eventlog, logs or profile (or none to tell by content)", f.Kind)
	}
	if id, ok := p.KeyStored(r.Tenant, f.Key); ok {
		// Answered before the body is read: a client that sent
		// "Expect: 100-continue" does not send it.
		return &Result{ID: id, Duplicate: true}, nil
	}
	var res *Result
	err = p.receive(ctx, r, func(body *Body) error {
		f.Data, f.Body = body.Data, body
		if mt, _, err := mime.ParseMediaType(f.ContentType); err == nil && mt == "multipart/form-data" {
			parts, err := ParseBody(f.Data, f.ContentType, "")
			if err != nil {
				return err
			}
			f.Data, f.JFRLabels = parts.Data, parts.Labels
		}
		if res, err = p.Import(r.Tenant, f); err != nil {
			return err
		}
		if !res.Duplicate && len(res.Labels) > 0 {
			p.senders.Uploaded(Sender{Tenant: r.Tenant, Remote: r.Remote, Labels: res.Labels}, len(f.Data), 0, 0)
		}
		return nil
	})
	return res, err
}
