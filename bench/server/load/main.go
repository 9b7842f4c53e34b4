// Command load holds a sparkprof (or Pyroscope) server under the load of
// a fleet: agents agents each upload a JFR window every interval, for
// duration, while a dashboard renders a flame graph and timeline every
// second. Each upload is the recording given with its chunks' start times
// moved to the window just ended, so its samples fall where a live
// agent's would; with -labels, it goes with a LabelsSnapshot of task
// contexts as the Pyroscope Java agent's multipart upload (bench/contexts
// makes both). It reports errors, ingest and render latencies (p50, p99,
// max) and how many uploads were acknowledged, and with -pid the server's
// CPU per upload once the first -warmup has passed (its compaction or
// flushes by then under way at their steady rate); bench/server/load.sh
// runs it against a server and adds the server's peak memory and what it
// stored.
package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/format/jfr"
)

func main() {
	server := flag.String("server", "http://127.0.0.1:4040", "the server's base URL")
	agents := flag.Int("agents", 200, "agents uploading")
	interval := flag.Duration("interval", 10*time.Second, "time between an agent's uploads (its window)")
	duration := flag.Duration("duration", 5*time.Minute, "how long the load lasts")
	renderEvery := flag.Duration("render", time.Second, "time between renders (0: none)")
	labelsFile := flag.String("labels", "", "a LabelsSnapshot (protobuf, gzipped or not) sent beside each JFR as a multipart upload")
	pid := flag.Int("pid", 0, "the server's process, whose CPU (from /proc) per upload acknowledged after -warmup is reported")
	warmup := flag.Duration("warmup", time.Minute, "with -pid, time from the start before the server's CPU is counted")
	query := flag.String("query", `process_cpu:cpu:nanoseconds:cpu:nanoseconds{}`, "the renders' query, as Grafana sends it: a profile type and labels")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: load [flags] RECORDING\n  RECORDING: a JFR file (gzipped or not), sent as each upload")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 || *agents < 1 || *interval <= 0 || *duration <= 0 {
		flag.Usage()
		os.Exit(2)
	}
	data, err := format.ReadFile(flag.Arg(0), 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
	_, err = jfr.Chunks(data)
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
	r := &run{server: *server, query: *query, data: data, interval: *interval,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *agents}, Timeout: time.Minute}}
	if *labelsFile != "" {
		if r.labels, err = os.ReadFile(*labelsFile); err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			os.Exit(1)
		}
	}
	if *pid > 0 {
		r.cpu = &cpuMeter{pid: *pid}
		if _, err := r.cpu.read(); err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			os.Exit(1)
		}
		if *warmup >= *duration {
			fmt.Fprintf(os.Stderr, "load: -warmup %v leaves nothing of -duration %v to measure\n", *warmup, *duration)
			os.Exit(2)
		}
		r.cpu.after = time.Now().Add(*warmup)
		time.AfterFunc(*warmup, func() {
			base, _ := r.cpu.read()
			r.mu.Lock()
			r.cpu.base = base
			r.mu.Unlock()
		})
	}
	r.start(*agents, *duration, *renderEvery)
	r.report(os.Stdout)
	if r.errors.Load() > 0 {
		os.Exit(1)
	}
}

// run is one load run and what it measured.
type run struct {
	server   string
	query    string
	data     []byte
	labels   []byte    // a LabelsSnapshot sent with each JFR, or nil
	cpu      *cpuMeter // the server's CPU, or nil
	interval time.Duration
	client   *http.Client

	mu                sync.Mutex
	ingest, render    []time.Duration
	acked, errors     atomic.Int64
	firstErrors       []string
	renderSamples     int64
	renders, uploadsN int
}

// start runs the agents, their starts spread over one interval, and the
// renders, until duration has passed; it returns when every request has
// its answer.
func (r *run) start(agents int, duration, renderEvery time.Duration) {
	end := time.Now().Add(duration)
	var wg sync.WaitGroup
	for a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(r.interval * time.Duration(a) / time.Duration(agents))
			tick := time.NewTicker(r.interval)
			defer tick.Stop()
			for seq := 0; time.Now().Before(end); seq++ {
				r.upload(a, seq)
				<-tick.C
			}
		}()
	}
	if renderEvery > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(renderEvery)
			defer tick.Stop()
			for time.Now().Before(end) {
				<-tick.C
				r.renderOnce()
			}
		}()
	}
	wg.Wait()
}

// upload sends agent a's window seq: the recording, dated to the window
// that just ended.
func (r *run) upload(a, seq int) {
	until := time.Now()
	from := until.Add(-r.interval)
	body, err := jfr.Redate(r.data, from.UnixNano())
	if err != nil {
		panic(err) // checked in main
	}
	contentType := "application/octet-stream"
	if r.labels != nil {
		contentType, body = multipartJFR(body, r.labels)
	}
	name := fmt.Sprintf("load.cpu{spark_app_id=app-load,spark_executor_id=%d,host=host-%d}", a, a%50)
	q := url.Values{"name": {name}, "format": {"jfr"}, "from": {fmt.Sprint(from.Unix())}, "until": {fmt.Sprint(until.Unix())}}
	req, _ := http.NewRequest("POST", r.server+"/ingest?"+q.Encode(), bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Idempotency-Key", fmt.Sprintf("load-%d-%d", a, seq))
	start := time.Now()
	resp, err := r.client.Do(req)
	d := time.Since(start)
	if err == nil {
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("HTTP %s: %s", resp.Status, bytes.TrimSpace(msg))
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.uploadsN++
	if err != nil {
		r.failed("upload: " + err.Error())
		return
	}
	r.acked.Add(1)
	r.ingest = append(r.ingest, d)
	if r.cpu != nil && start.After(r.cpu.after) {
		r.cpu.acked++
	}
}

// multipartJFR returns the body of a multipart upload of a JFR and its
// labels, as the Pyroscope Java agent sends them, and its content type.
func multipartJFR(jfr, labels []byte) (string, []byte) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for _, part := range []struct {
		name string
		data []byte
	}{{"jfr", jfr}, {"labels", labels}} {
		w, _ := mw.CreateFormFile(part.name, part.name)
		w.Write(part.data)
	}
	mw.Close()
	return mw.FormDataContentType(), b.Bytes()
}

// cpuMeter counts a process's CPU time from /proc from a start on, and
// the uploads sent after that start and acknowledged.
type cpuMeter struct {
	pid   int
	after time.Time     // uploads sent after it count
	base  time.Duration // the CPU time at after; under run.mu
	acked int           // under run.mu
}

// read returns the process's user and system CPU time so far.
func (m *cpuMeter) read() (time.Duration, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", m.pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command, which is in parentheses and may hold
	// spaces: utime and stime are the 12th and 13th of them, in clock
	// ticks (100 a second on Linux).
	i := bytes.LastIndexByte(stat, ')')
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the command", m.pid, len(f))
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := cmp.Or(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", m.pid, err)
	}
	return time.Duration(u+s) * 10 * time.Millisecond, nil
}

// renderOnce asks for the flame graph and timeline of the last five
// minutes of the fleet, as a Grafana panel does.
func (r *run) renderOnce() {
	q := url.Values{"query": {r.query}, "from": {"now-5m"}, "until": {"now"}}
	start := time.Now()
	resp, err := r.client.Get(r.server + "/pyroscope/render?" + q.Encode())
	var ans struct {
		Flamebearer struct {
			NumTicks int64 `json:"numTicks"`
		} `json:"flamebearer"`
	}
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("HTTP %s: %s", resp.Status, bytes.TrimSpace(b))
		} else if jerr := json.Unmarshal(b, &ans); jerr != nil {
			err = jerr
		}
	}
	d := time.Since(start)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.renders++
	if err != nil {
		r.failed("render: " + err.Error())
		return
	}
	r.render = append(r.render, d)
	r.renderSamples = ans.Flamebearer.NumTicks
}

// failed counts an error, keeping the first few; under mu.
func (r *run) failed(msg string) {
	r.errors.Add(1)
	if len(r.firstErrors) < 5 {
		r.firstErrors = append(r.firstErrors, msg)
	}
}

// report writes what the run measured.
func (r *run) report(w io.Writer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(w, "uploads %d, acknowledged %d; renders %d; errors %d\n", r.uploadsN, r.acked.Load(), r.renders, r.errors.Load())
	fmt.Fprintf(w, "ingest latency: %s\n", quantiles(r.ingest))
	fmt.Fprintf(w, "render latency: %s (the last one's flame graph: %d ticks)\n", quantiles(r.render), r.renderSamples)
	for _, e := range r.firstErrors {
		fmt.Fprintln(w, "error:", e)
	}
	if r.cpu != nil {
		used, err := r.cpu.read()
		switch {
		case err != nil:
			fmt.Fprintln(w, "server CPU:", err)
		case r.cpu.acked == 0:
			fmt.Fprintln(w, "server CPU: no upload acknowledged after the warm-up")
		default:
			used -= r.cpu.base
			fmt.Fprintf(w, "server CPU after the warm-up: %.1f s for %d uploads, %.1f ms per upload\n",
				used.Seconds(), r.cpu.acked, float64(used.Microseconds())/1000/float64(r.cpu.acked))
		}
	}
	fmt.Fprintf(w, "acknowledged=%d\n", r.acked.Load())
}

// quantiles writes the p50, p99 and max of ds.
func quantiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	q := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return fmt.Sprintf("p50 %v, p99 %v, max %v", q(0.5).Round(time.Millisecond), q(0.99).Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond))
}
