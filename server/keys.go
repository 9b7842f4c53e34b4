package server

import (
	"encoding/binary"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// keyStored reports whether tenant stored an upload under key, when the
// store can tell before an upload is decoded (keyIndex); Append decides
// otherwise.
func (s *Server) keyStored(tenant, key string) (uint64, bool) {
	ki, ok := s.cfg.Store.(keyIndex)
	if !ok || key == "" {
		return 0, false
	}
	return ki.KeyStored(tenant, key)
}

// keyIndex is a store that can tell whether an upload key was stored, so
// that a retry is answered before its body is read or decoded: a client
// that sent "Expect: 100-continue" then does not send it at all.
type keyIndex interface {
	KeyStored(tenant, key string) (id uint64, ok bool)
}

// replayed answers an upload stored before under key, as upload id.
func (s *Server) replayed(w http.ResponseWriter, who sender, tenant, key string, id uint64) {
	s.metrics.duplicates.Inc()
	s.agents.retried(who)
	s.log.Debug("upload stored already", "tenant", tenant, "key", key, "id", id)
	w.Header().Set(replayedHeader, "true")
	w.WriteHeader(http.StatusOK)
}

// replayedHeader, set to "true", tells a sender that its upload was stored
// before, under the same Idempotency-Key, and not stored again.
const replayedHeader = "Idempotent-Replayed"

// maxKeyBytes bounds an Idempotency-Key.
const maxKeyBytes = 255

// idempotencyKey returns the request's Idempotency-Key, which names an
// upload the same on every attempt to send it, so that a retry of an upload
// whose answer was lost is not stored twice: quoted (a structured field
// string, as the IETF draft has it) or bare, of printable ASCII; "" when
// the sender names none.
func idempotencyKey(r *http.Request) (string, error) {
	k := strings.TrimSpace(r.Header.Get("Idempotency-Key"))
	if len(k) >= 2 && k[0] == '"' && k[len(k)-1] == '"' {
		k = k[1 : len(k)-1]
	}
	if len(k) > maxKeyBytes {
		return "", fmt.Errorf("Idempotency-Key: %d bytes, more than %d", len(k), maxKeyBytes)
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e || k[i] == '"' || k[i] == '\\' {
			return "", fmt.Errorf("Idempotency-Key: byte %d is %q; use printable ASCII without quotes or backslashes", i, k[i])
		}
	}
	return k, nil
}

// contentKey returns the key of an upload whose sender named none, for the
// uploads a retry can be told by content: a JFR or pprof profile (they hold
// their own timestamps, so two senders' never match) over a given window,
// as the Pyroscope Java agent sends them and retries them after a timeout.
// It digests what decides the stored upload: the name, the window and the
// parts (not the multipart body, whose boundary may change between
// attempts). xxhash rather than a cryptographic hash: it reads a 700 KB
// body in ~0.06 ms instead of ~2 ms, and a tenant's own senders choose
// what it digests. Other uploads get "": folded stacks of idle processes
// can match byte for byte.
func contentKey(q url.Values, parts uploadParts) string {
	f := q.Get("format")
	if f != "jfr" && f != "pprof" || q.Get("from") == "" || q.Get("until") == "" {
		return ""
	}
	h := xxhash.New()
	for _, s := range []string{q.Get("name"), q.Get("from"), q.Get("until"), f} {
		h.WriteString(s)
		h.Write([]byte{0})
	}
	for _, b := range [][]byte{parts.data, parts.labels, parts.tasks, parts.gc} {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	return fmt.Sprintf("content:%016x", h.Sum64())
}
