package ingest

import (
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sparkprof/sparkprof/profile"
)

// Senders tracks who sends data, so that a user sees at once why nothing
// shows up.
type Senders struct {
	mu sync.Mutex
	by map[string]*Agent
}

// Agent is one sender: an app's executor on a host.
type Agent struct {
	Tenant     string `json:"tenant"`
	App        string `json:"app"`
	AppID      string `json:"appId,omitempty"`
	ExecutorID string `json:"executorId,omitempty"`
	Host       string `json:"host,omitempty"`
	Remote     string `json:"remote"`
	First      int64  `json:"firstUploadMs"`
	Last       int64  `json:"lastUploadMs"`
	SpyName    string `json:"spyName,omitempty"` // the client, as its uploads name it
	Uploads    int64  `json:"uploads"`
	Bytes      int64  `json:"bytes"`
	// Dropped counts the windows the agent dropped while it could not
	// send them (its uploads' dropped parameter).
	Dropped int64 `json:"dropped"`
	// Retried counts uploads sent again after they were stored: their
	// answers were lost (timeouts between sender and server), the retries
	// not stored twice.
	Retried int64 `json:"retried"`
	// WindowLagMs is how long before the server received it the last
	// upload's window ended (negative: after), for live uploads that say
	// their window. A live agent's is seconds; hours mean the sender's
	// clock is off, and its samples show that far from now.
	WindowLagMs *int64 `json:"windowLagMs,omitempty"`
	Errors      int64  `json:"errors"`
	LastError   string `json:"lastError,omitempty"`
}

func newSenders() *Senders { return &Senders{by: map[string]*Agent{}} }

// Sender identifies the agent of an upload: its labels, or the name it
// gave when that did not parse.
type Sender struct {
	Tenant, Remote string
	SpyName        string // the client, as its uploads name it
	Labels         profile.Labels
	Name           string
}

// row returns the fields that tell s's row apart, and its key.
func (s Sender) row() (Agent, string) {
	ag := Agent{Tenant: s.Tenant, App: s.Name}
	if s.Labels != nil {
		get := func(n string) string { v, _ := s.Labels.Get(n); return v }
		ag.App, ag.AppID, ag.ExecutorID, ag.Host = get(profile.LabelServiceName), get(profile.LabelAppID), get(profile.LabelExecutorID), get(profile.LabelHost)
	}
	return ag, strings.Join([]string{ag.Tenant, ag.App, ag.AppID, ag.ExecutorID, ag.Host}, "\x00")
}

// of returns s's row, adding it if needed; for a failed upload (failed)
// only while the list has room (maxFailedAgents), else it returns nil.
func (a *Senders) of(s Sender, failed bool) *Agent {
	row, key := s.row()
	ag := a.by[key]
	if ag == nil {
		if failed && len(a.by) >= maxFailedAgents {
			return nil
		}
		row.First = time.Now().UnixMilli()
		ag = &row
		a.by[key] = ag
	}
	ag.Remote = s.Remote
	if s.SpyName != "" {
		ag.SpyName = s.SpyName
	}
	return ag
}

// Uploaded counts an upload of bytes; dropped is the sender's count of
// windows it dropped so far, windowEnd the end of the upload's window
// (Unix ns; 0 for an import, whose files may be of any age).
func (a *Senders) Uploaded(s Sender, bytes int, dropped, windowEnd int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ag := a.of(s, false)
	ag.Uploads++
	ag.Bytes += int64(bytes)
	ag.Dropped = max(ag.Dropped, dropped)
	now := time.Now()
	ag.Last = now.UnixMilli()
	if windowEnd != 0 {
		lag := now.Sub(time.Unix(0, windowEnd)).Milliseconds()
		ag.WindowLagMs = &lag
	}
}

// maxFailedAgents bounds the senders the list keeps for failed uploads
// alone: a sender that never succeeds (a wrong token, a broken name) gets
// a row until then, so that anyone on the network cannot grow it without
// end.
const maxFailedAgents = 10_000

// Retried counts an upload that was stored before, sent again.
func (a *Senders) Retried(s Sender) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ag := a.of(s, false)
	ag.Retried++
	ag.Last = time.Now().UnixMilli()
}

// Failed counts an upload of s that failed, and why.
func (a *Senders) Failed(s Sender, why string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ag := a.of(s, true)
	if ag == nil {
		return
	}
	ag.Errors++
	ag.LastError = why
	ag.Last = time.Now().UnixMilli()
}

// List returns the tenant's senders, the latest upload first.
func (a *Senders) List(tenant string) []Agent {
	a.mu.Lock()
	out := []Agent{}
	for _, ag := range a.by {
		if ag.Tenant == tenant {
			out = append(out, *ag)
		}
	}
	a.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Last > out[j].Last })
	return out
}
