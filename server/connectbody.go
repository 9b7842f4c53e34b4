package server

import (
	"bytes"
	"encoding/binary"
	"io"
	"net/http"
	"strings"

	"connectrpc.com/connect"

	"github.com/sparkprof/sparkprof/ingest"
	"github.com/sparkprof/sparkprof/internal/errkind"
)

// connectFactor estimates the memory a Connect request's message holds
// beside its body, as a multiple of its uncompressed size: the handler's
// read buffer (which doubles as it reads) and the message unmarshalled
// from it.
const connectFactor = 3

// readConnect reads the body of a request to a Connect API (Push, the
// querier) before its handler does, and before it waits for a turn:
// through the ingest memory, as the bytes arrive, and inflated there as
// it inflates, with what the handler will hold of it reserved beside it.
// The handler then reads it uncompressed from memory, so that neither a
// gzip bomb nor a request waiting its turn while its deadline runs holds
// memory no budget counts, or is refused as too slow. The memory is
// given back when the handler returns; Push draws its decoding with it
// (ingest.WithBody).
func (s *Server) readConnect(h http.Handler) http.Handler {
	errors := connect.NewErrorWriter()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		body, err := s.ingest.ReadBody(r.Body, r.ContentLength, s.cfg.MaxBodyBytes)
		if err != nil {
			s.connectRefused(errors, w, r, err)
			return
		}
		defer body.Free()
		data, err := s.inflateConnect(body, r.Header)
		if err == nil {
			err = body.Reserve(connectFactor*int64(len(data)), "the request's message")
		}
		if err != nil {
			s.connectRefused(errors, w, r, err)
			return
		}
		r = r.WithContext(ingest.WithBody(r.Context(), body))
		r.Header = r.Header.Clone()
		r.Header.Del("Content-Encoding")
		r.Body = io.NopCloser(bytes.NewReader(data))
		r.ContentLength = int64(len(data))
		h.ServeHTTP(w, r)
	})
}

// connectRefused answers err in the request's protocol, counting a
// refused push as an upload error. A body too large is
// resource_exhausted, as Connect answers a message past its limit.
func (s *Server) connectRefused(errors *connect.ErrorWriter, w http.ResponseWriter, r *http.Request, err error) {
	if strings.HasPrefix(r.URL.Path, "/push.") {
		s.metrics.uploadError(statusOf(err))
	}
	ce := connectError(err)
	if errkind.Of(err) == errkind.TooLarge {
		ce = connect.NewError(connect.CodeResourceExhausted, err)
	}
	errors.Write(w, r, ce)
}

// inflateConnect returns a Connect request's body uncompressed: whole,
// as the Connect protocol's unary requests compress it (Content-Encoding),
// or message by message in the envelopes of gRPC, gRPC-Web and Connect's
// streams. A compression other than gzip is left to the handler to
// refuse.
func (s *Server) inflateConnect(body *ingest.Body, h http.Header) ([]byte, error) {
	ct := h.Get("Content-Type")
	if !strings.HasPrefix(ct, "application/grpc") && !strings.HasPrefix(ct, "application/connect+") {
		if h.Get("Content-Encoding") != "gzip" {
			return body.Data, nil
		}
		return s.ingest.Inflate(body, body.Data, s.cfg.MaxBodyBytes, "the request's body")
	}
	enc := h.Get("Grpc-Encoding")
	if strings.HasPrefix(ct, "application/connect+") {
		enc = h.Get("Connect-Content-Encoding")
	}
	if enc != "gzip" {
		return body.Data, nil
	}
	// Envelopes: a flags byte (1: compressed), a big-endian length, the
	// message. Each compressed one is written inflated, its flag off.
	var flags []byte
	var msgs [][]byte
	size := 0
	for data := body.Data; len(data) > 0; {
		if len(data) < 5 || int64(binary.BigEndian.Uint32(data[1:5])) > int64(len(data)-5) {
			return nil, errkind.Errorf(errkind.BadInput, "the request's body ends within a message's envelope")
		}
		msg := data[5 : 5+binary.BigEndian.Uint32(data[1:5])]
		if data[0]&1 != 0 {
			var err error
			if msg, err = s.ingest.Inflate(body, msg, s.cfg.MaxBodyBytes, "a message of the request"); err != nil {
				return nil, err
			}
		}
		flags, msgs = append(flags, data[0]&^1), append(msgs, msg)
		size += 5 + len(msg)
		data = data[5+binary.BigEndian.Uint32(data[1:5]):]
	}
	if err := body.Reserve(int64(size), "the request's messages"); err != nil {
		return nil, err
	}
	out := make([]byte, 0, size)
	for i, msg := range msgs {
		out = binary.BigEndian.AppendUint32(append(out, flags[i]), uint32(len(msg)))
		out = append(out, msg...)
	}
	return out, nil
}
