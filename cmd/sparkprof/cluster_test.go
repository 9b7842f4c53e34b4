package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/internal/seaweedtest"
)

// clusterWait bounds every wait of the scale-out tests for a node's own
// signal (its /ready, a metric, a log line, an answer): a guard against a
// hang, not a measure; the signals come long before it.
const clusterWait = 3 * time.Minute

// clusterNode is a sparkprof serve process of a scale-out test, on one
// address for its whole life, so that a restart keeps its clients' URL.
type clusterNode struct {
	t    *testing.T
	name string
	bin  string
	data string
	args []string
	addr string // host:port, fixed at the first start
	base string // http://addr

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	logs   []string // its stderr's lines, every run
}

// startNode starts `sparkprof serve --data data args...` on a free port
// with credentials for the test's object store and waits until it is
// ready. It is killed when the test ends.
func startNode(t *testing.T, name, bin, data string, args ...string) *clusterNode {
	t.Helper()
	n := newNode(t, name, bin, data, args...)
	n.start()
	return n
}

// newNode returns a node that is not started yet, killed when the test
// ends.
func newNode(t *testing.T, name, bin, data string, args ...string) *clusterNode {
	n := &clusterNode{t: t, name: name, bin: bin, data: data, args: args, addr: "127.0.0.1:0"}
	t.Cleanup(func() {
		n.kill()
		if t.Failed() {
			n.dumpLog()
		}
	})
	return n
}

// start runs the node's process and waits for its /ready.
func (n *clusterNode) start() {
	n.t.Helper()
	n.spawn()
	n.ready()
}

// spawn runs the node's process and waits until it listens.
func (n *clusterNode) spawn() {
	n.t.Helper()
	// The tests wait for the nodes' INFO lines (flushes, the lease).
	cmd := exec.Command(n.bin, append([]string{"serve", "--addr", n.addr, "--data", n.data, "--log-level", "info"}, n.args...)...)
	cmd.Env = append(os.Environ(), seaweedtest.Env()...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		n.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		n.t.Fatal(err)
	}
	exited := make(chan struct{})
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			n.mu.Lock()
			n.logs = append(n.logs, line)
			n.mu.Unlock()
			if _, after, ok := strings.Cut(line, "listening on "); ok {
				addr, _, _ := strings.Cut(after, " ")
				select {
				case listening <- strings.TrimPrefix(addr, "http://"):
				default:
				}
			}
		}
		cmd.Wait()
		close(exited)
	}()
	n.mu.Lock()
	n.cmd, n.exited = cmd, exited
	n.mu.Unlock()
	select {
	case addr := <-listening:
		if n.base == "" {
			n.addr, n.base = addr, "http://"+addr
		}
	case <-exited:
		n.t.Fatalf("node %s exited before it listened:\n%s", n.name, n.logTail())
	case <-time.After(clusterWait):
		n.t.Fatalf("node %s did not listen", n.name)
	}
}

// ready waits until the node's /ready answers 200.
func (n *clusterNode) ready() {
	n.t.Helper()
	n.waitFor("/ready answers 200", func() bool {
		resp, err := http.Get(n.base + "/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// kill kills the node's process with SIGKILL and waits for it to exit.
func (n *clusterNode) kill() {
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.cmd = nil
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// waitFor polls cond until it holds; the test fails when the node exits
// or clusterWait passes first.
func (n *clusterNode) waitFor(what string, cond func() bool) {
	n.t.Helper()
	n.waitEvery(what, 50*time.Millisecond, cond, nil)
}

// waitEvery is waitFor polling every interval; on failure the test's
// message ends with last(), when last is not nil.
func (n *clusterNode) waitEvery(what string, interval time.Duration, cond func() bool, last func() string) {
	n.t.Helper()
	deadline := time.Now().Add(clusterWait)
	for !cond() {
		n.mu.Lock()
		exited := n.exited
		n.mu.Unlock()
		select {
		case <-exited:
			n.t.Fatalf("node %s exited while waiting until %s:\n%s", n.name, what, n.logTail())
		default:
		}
		if time.Now().After(deadline) {
			msg := fmt.Sprintf("node %s: waited %v until %s", n.name, clusterWait, what)
			if last != nil {
				msg += "; last: " + last()
			}
			n.t.Fatal(msg)
		}
		time.Sleep(interval)
	}
}

// uploadCounts says how many uploads the node reads from its head and
// the bucket, by its metrics.
func (n *clusterNode) uploadCounts() string {
	var parts []string
	for _, name := range []string{"sparkprof_store_head_uploads", "sparkprof_bucket_blocks", "sparkprof_bucket_block_uploads",
		"sparkprof_bucket_segments", "sparkprof_bucket_segment_uploads"} {
		v, _, err := n.metric(name)
		if err != nil {
			return err.Error()
		}
		parts = append(parts, fmt.Sprintf("%s %v", strings.TrimPrefix(name, "sparkprof_"), v))
	}
	return strings.Join(parts, ", ")
}

// metric returns the sum of the node's /metrics samples named name (all
// its series), and whether the name was there.
func (n *clusterNode) metric(name string) (float64, bool, error) {
	resp, err := http.Get(n.base + "/metrics")
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	sum, found := 0.0, false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		fields := strings.Fields(rest[strings.LastIndexByte(rest, '}')+1:])
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return 0, false, fmt.Errorf("%s: %q: %w", name, line, err)
		}
		sum, found = sum+v, true
	}
	return sum, found, sc.Err()
}

// waitMetric waits until the node's metric name satisfies cond.
func (n *clusterNode) waitMetric(name, what string, cond func(float64) bool) float64 {
	n.t.Helper()
	var v float64
	n.waitFor(name+" "+what, func() bool {
		got, ok, err := n.metric(name)
		v = got
		return err == nil && ok && cond(got)
	})
	return v
}

// mustMetric returns the node's metric name; the test fails when the node
// does not export it.
func (n *clusterNode) mustMetric(name string) float64 {
	n.t.Helper()
	v, ok, err := n.metric(name)
	if err != nil || !ok {
		n.t.Fatalf("node %s: metric %s: found %v, %v", n.name, name, ok, err)
	}
	return v
}

// logged says how many of the node's log lines so far contain s.
func (n *clusterNode) logged(s string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := 0
	for _, l := range n.logs {
		if strings.Contains(l, s) {
			c++
		}
	}
	return c
}

// logValues returns, for each of the node's log lines that contain msg,
// the value of its key=value field key.
func (n *clusterNode) logValues(msg, key string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var vs []string
	for _, l := range n.logs {
		if !strings.Contains(l, msg) {
			continue
		}
		for _, f := range strings.Fields(l) {
			if v, ok := strings.CutPrefix(f, key+"="); ok {
				vs = append(vs, strings.Trim(v, `"`))
			}
		}
	}
	return vs
}

// shipped is how many uploads the node says it shipped to the bucket, its
// "flushed head segment" lines' uploads, over all its runs.
func (n *clusterNode) shipped() int {
	c := 0
	for _, v := range n.logValues("flushed head segment", "uploads") {
		k, _ := strconv.Atoi(v)
		c += k
	}
	return c
}

func (n *clusterNode) logTail() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	from := max(0, len(n.logs)-40)
	return strings.Join(n.logs[from:], "\n")
}

func (n *clusterNode) dumpLog() {
	n.t.Logf("node %s (%s), the end of its log:\n%s", n.name, n.base, n.logTail())
}

// render is what a node answers for a flame graph: its total and the
// blocks it could not read.
type render struct {
	Total   int64
	Missing []string
	Status  int
	// Said is whether the answer had a missingBlocks field at all.
	Said bool
}

// render asks the node for the CPU flame graph of selector sel.
func (n *clusterNode) render(ctx context.Context, sel string) (render, error) {
	u := n.base + "/api/v1/render?" + url.Values{"query": {sel}, "type": {"cpu"}}.Encode()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return render{}, err
	}
	defer resp.Body.Close()
	var r struct {
		Flamebearer struct {
			NumTicks int64 `json:"numTicks"`
		} `json:"flamebearer"`
		MissingBlocks *[]string `json:"missingBlocks"`
	}
	if resp.StatusCode != http.StatusOK {
		return render{Status: resp.StatusCode}, nil
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return render{}, fmt.Errorf("render %s: %w", sel, err)
	}
	out := render{Total: r.Flamebearer.NumTicks, Status: resp.StatusCode, Said: r.MissingBlocks != nil}
	if r.MissingBlocks != nil {
		out.Missing = *r.MissingBlocks
	}
	return out, nil
}

// recording is one of the corpus's JFR files an agent of the fleet sends:
// its bytes and the total of its CPU samples.
type recording struct {
	jfr []byte
	cpu int64
}

// loadRecordings reads the corpus's dump1 and dump2 recordings.
func loadRecordings(t *testing.T) []recording {
	t.Helper()
	var recs []recording
	for _, name := range []string{"dump1.jfr.gz", "dump2.jfr.gz"} {
		b, err := format.ReadFile(corpus.Path(t, "jfr", name), 0)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, recording{jfr: b, cpu: offlineCPU(t, b)})
	}
	return recs
}

// fleet is a test's agents: agent a sends recording a%len(recs), labelled
// as executor a of app "app-1" of service svc, to the node route(a) names.
// It counts, per agent, the uploads acknowledged (200), refused (another
// status) and unanswered (the connection failed: stored or not).
type fleet struct {
	svc   string
	recs  []recording
	route func(agent int) *clusterNode
	// end, when not nil, gives the end of agent a's window; else it ends
	// now.
	end func(agent int) time.Time

	mu         sync.Mutex
	acked      []int
	refused    []int
	unanswered []int
	seq        []int
}

func newFleet(svc string, agents int, recs []recording, route func(int) *clusterNode) *fleet {
	return &fleet{svc: svc, recs: recs, route: route,
		acked: make([]int, agents), refused: make([]int, agents), unanswered: make([]int, agents), seq: make([]int, agents)}
}

// send sends agent a's next upload, dated to the ten seconds just ended
// (or before f.end(a)),
// with an Idempotency-Key of its own, and counts its answer.
func (f *fleet) send(a int) (int, error) {
	f.mu.Lock()
	seq := f.seq[a]
	f.seq[a]++
	f.mu.Unlock()
	now := time.Now()
	if f.end != nil {
		now = f.end(a)
	}
	q := url.Values{
		"name":   {fmt.Sprintf("%s{spark_app_id=app-1,spark_executor_id=%d}", f.svc, a)},
		"format": {"jfr"},
		"from":   {strconv.FormatInt(now.Add(-10*time.Second).Unix(), 10)},
		"until":  {strconv.FormatInt(now.Unix(), 10)},
	}
	req, _ := http.NewRequest(http.MethodPost, f.route(a).base+"/ingest?"+q.Encode(), bytes.NewReader(f.recs[a%len(f.recs)].jfr))
	req.Header.Set("Idempotency-Key", fmt.Sprintf("%s-%d-%d", f.svc, a, seq))
	resp, err := http.DefaultClient.Do(req)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.unanswered[a]++
		return 0, err
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		f.acked[a]++
	} else {
		f.refused[a]++
	}
	return resp.StatusCode, nil
}

// stream runs every agent, each sending an upload, pausing and sending the
// next, until stop is closed. up, when not nil, holds agent a back while
// it returns false (its node is down, as an agent's queue would).
func (f *fleet) stream(stop <-chan struct{}, up func(a int) bool) *sync.WaitGroup {
	var wg sync.WaitGroup
	for a := range f.acked {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(500 * time.Millisecond):
				}
				if up == nil || up(a) {
					f.send(a)
				}
			}
		}()
	}
	return &wg
}

// total is the count of acknowledged uploads, over the agents for which
// keep is true (nil: all).
func (f *fleet) total(keep func(a int) bool) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for a, c := range f.acked {
		if keep == nil || keep(a) {
			n += c
		}
	}
	return n
}

// refusedBy is the count of refused uploads, over the agents for which
// keep is true (nil: all).
func (f *fleet) refusedBy(keep func(a int) bool) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for a, c := range f.refused {
		if keep == nil || keep(a) {
			n += c
		}
	}
	return n
}

// waitAcked waits until the agents for which keep is true (nil: all) have
// n acknowledged uploads more than from.
func (f *fleet) waitAcked(t *testing.T, keep func(a int) bool, from, n int) {
	t.Helper()
	deadline := time.Now().Add(clusterWait)
	for f.total(keep) < from+n {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %d more acknowledged uploads; %d so far", clusterWait, n, f.total(keep)-from)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// want is the CPU total the acknowledged uploads of agent a add up to,
// and, at most, with the unanswered ones (which may have been stored).
func (f *fleet) want(a int) (acked, most int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.recs[a%len(f.recs)].cpu
	return int64(f.acked[a]) * c, int64(f.acked[a]+f.unanswered[a]) * c
}

// wantAll is want over every agent.
func (f *fleet) wantAll() (acked, most int64) {
	for a := range f.acked {
		x, y := f.want(a)
		acked, most = acked+x, most+y
	}
	return acked, most
}

// selector is the selector of the fleet's service, or of one agent's
// executor when a >= 0.
func (f *fleet) selector(a int) string {
	if a < 0 {
		return fmt.Sprintf(`{service_name=%q}`, f.svc)
	}
	return fmt.Sprintf(`{service_name=%q, spark_executor_id="%d"}`, f.svc, a)
}

// checkTotals waits until every node's render of the whole fleet answers
// a total within what the fleet acknowledged and what it may have stored,
// with no block missing, then checks every agent's total on every node.
// agentsOff lists the agents whose totals node n answers wrong, with what
// it answers and what was acknowledged.
func (f *fleet) agentsOff(n *clusterNode) string {
	var off []string
	for a := range f.acked {
		lo, hi := f.want(a)
		r, err := n.render(context.Background(), f.selector(a))
		if err != nil || r.Total < lo || r.Total > hi {
			off = append(off, fmt.Sprintf("%d: %d for %d (%v)", a, r.Total, lo, err))
		}
	}
	return strings.Join(off, "; ")
}

func (f *fleet) checkTotals(t *testing.T, nodes ...*clusterNode) {
	t.Helper()
	lo, hi := f.wantAll()
	for _, n := range nodes {
		var last render
		var lastErr error
		// A render of the whole fleet costs a node a core for a while
		// when the bucket holds many segments: ask twice a second.
		// A node lists the others' segments once a flush interval: its
		// total can be in range while an upload of one agent is still to
		// come, so each agent's is waited for too.
		agentsIn := func() bool {
			for a := range f.acked {
				lo, hi := f.want(a)
				if r, err := n.render(context.Background(), f.selector(a)); err != nil || r.Total < lo || r.Total > hi {
					return false
				}
			}
			return true
		}
		n.waitEvery(fmt.Sprintf("the fleet's total is %d (at most %d with unanswered uploads)", lo, hi), 500*time.Millisecond, func() bool {
			r, err := n.render(context.Background(), f.selector(-1))
			last, lastErr = r, err
			return err == nil && r.Status == http.StatusOK && r.Total >= lo && r.Total <= hi && len(r.Missing) == 0 && agentsIn()
		}, func() string {
			return fmt.Sprintf("HTTP %d, total %d, %d blocks missing, %v; %d uploads acknowledged; %s; agents off: %s",
				last.Status, last.Total, len(last.Missing), lastErr, f.total(nil), n.uploadCounts(), f.agentsOff(n))
		})
		for a := range f.acked {
			lo, hi := f.want(a)
			r, err := n.render(context.Background(), f.selector(a))
			if err != nil || r.Total < lo || r.Total > hi || r.Total%f.recs[a%len(f.recs)].cpu != 0 {
				t.Errorf("node %s, agent %d: total %d (%v), want %d acknowledged (at most %d)", n.name, a, r.Total, err, lo, hi)
			}
		}
		t.Logf("node %s: total %d, %d acknowledged uploads", n.name, last.Total, f.total(nil))
	}
}
