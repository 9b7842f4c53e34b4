// Command send uploads a JVM's JFR windows to a sparkprof server's /ingest,
// as a fleet of executors would: upload i comes from executor i%executors
// and carries window (i/executors)%windows, so every executor sends the
// windows in order. bench/server/ingest.sh measures the server with it.
//
// One process sends every upload, so that the measured server shares its
// machine with a client that costs little, unlike a curl process per upload.
// With -concurrency N, N uploads are in flight at once, as when a stage's
// executors all end together and send their last windows. With several
// servers (-server URL,URL,...), upload i goes to server i%len(servers),
// as a load balancer in front of several nodes spreads them.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/format/jfr"
)

func main() {
	server := flag.String("server", "http://127.0.0.1:4040", "the server's base URL, or several, separated by commas")
	uploads := flag.Int("n", 1000, "number of uploads")
	first := flag.Int("first", 0, "index of the first upload (to go on after an earlier run)")
	executors := flag.Int("executors", 100, "number of executors the uploads come from")
	gap := flag.Duration("gap", 0, "pause after each upload (a server with 100 executors sending every 10 s sees one upload per 100 ms)")
	fresh := flag.Bool("fresh", false, "open a new connection for each upload, as agents on other hosts do")
	concurrency := flag.Int("concurrency", 1, "uploads in flight at once")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: send [flags] RECORDING\n  RECORDING: JFR chunks one after the other (gzipped or not), as the agent writes a JVM's windows for outputDir")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 || *executors < 1 || *concurrency < 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := send(flag.Arg(0), strings.Split(*server, ","), *first, *uploads, *executors, *concurrency, *gap, *fresh); err != nil {
		fmt.Fprintln(os.Stderr, "send:", err)
		os.Exit(1)
	}
}

func send(recording string, servers []string, first, uploads, executors, concurrency int, gap time.Duration, fresh bool) error {
	data, err := format.ReadFile(recording, 0)
	if err != nil {
		return err
	}
	windows, err := jfr.Chunks(data)
	if err != nil {
		return fmt.Errorf("%s: %w", recording, err)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: fresh, MaxIdleConnsPerHost: concurrency}}
	next := make(chan int)
	errc := make(chan error, concurrency)
	var wg sync.WaitGroup
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := upload(client, servers[i%len(servers)], i, executors, windows); err != nil {
					errc <- err
					return
				}
				time.Sleep(gap)
			}
		}()
	}
	var failed error
loop:
	for i := first; i < first+uploads; i++ {
		select {
		case next <- i:
		case failed = <-errc:
			break loop
		}
	}
	close(next)
	wg.Wait()
	if failed == nil {
		select {
		case failed = <-errc:
		default:
		}
	}
	return failed
}

// upload sends upload i: executor i%executors's window (i/executors)%len(windows).
func upload(client *http.Client, server string, i, executors int, windows [][]byte) error {
	name := fmt.Sprintf("bench.cpu{spark_app_id=app-1,spark_executor_id=%d}", i%executors)
	u := server + "/ingest?format=jfr&name=" + url.QueryEscape(name)
	w := windows[(i/executors)%len(windows)]
	resp, err := client.Post(u, "application/octet-stream", bytes.NewReader(w))
	if err != nil {
		return fmt.Errorf("upload %d: %w", i, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("upload %d: HTTP %s: %s", i, resp.Status, bytes.TrimSpace(body))
	}
	return nil
}
