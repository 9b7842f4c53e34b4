// Command contexts turns a real async-profiler JFR recording into the
// upload a busy executor's 10 s window makes: its samples spread over N
// distinct task contexts, and the Pyroscope LabelsSnapshot that gives each
// context a stage, stage attempt, task and partition. It writes
// OUT.jfr.gz and OUT.labels.pb.gz, the two parts the Pyroscope Java agent
// sends (bench/server/send and curl can post them).
//
//	go run ./bench/contexts -n 1300 -o /tmp/ctx1300 ../shared/testdata/jfr/dump1.jfr.gz
package main

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/sparkprof/sparkprof/internal/synth"
)

func main() {
	n := flag.Int("n", 1300, "distinct task contexts")
	out := flag.String("o", "contexts", "output prefix: writes PREFIX.jfr.gz and PREFIX.labels.pb.gz")
	flag.Parse()
	if flag.NArg() != 1 || *n < 1 {
		fmt.Fprintln(os.Stderr, "usage: contexts [-n N] [-o PREFIX] RECORDING.jfr[.gz]")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *n, *out); err != nil {
		fmt.Fprintln(os.Stderr, "contexts:", err)
		os.Exit(1)
	}
}

func run(path string, n int, out string) error {
	recording, err := readMaybeGzip(path)
	if err != nil {
		return err
	}
	data, labels, err := synth.WithTaskContexts(recording, n)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for name, b := range map[string][]byte{out + ".jfr.gz": data, out + ".labels.pb.gz": labels} {
		if err := writeGzip(name, b); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "wrote %s\n", name)
	}
	return nil
}

// readMaybeGzip reads a file, gunzipping it when it starts with gzip's
// magic bytes.
func readMaybeGzip(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		return b, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	b, err = io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("%s: gunzip: %w", path, err)
	}
	return b, nil
}

func writeGzip(name string, b []byte) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(f)
	if _, err := zw.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	return f.Close()
}
