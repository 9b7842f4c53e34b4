package server

import (
	"context"
	"io"
	"log/slog"
	"net/url"
	"strconv"
	"testing"
	"time"

	"gocloud.dev/blob/fileblob"

	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/store"
	"github.com/sparkprof/sparkprof/store/objstore"
)

// BenchmarkIngestBucket measures the server's CPU time per upload of a
// plain JFR recording (cortex, 685 KB, as BenchmarkIngest's plain-jfr)
// without a bucket (the embedded store, compaction not counted) and with
// a local-directory bucket, the head shipped every 50 uploads and the
// shipping counted; compaction in the bucket is the compactor's work,
// not counted. Run the two side by side: -bench IngestBucket -count 6.
func BenchmarkIngestBucket(b *testing.B) {
	body := corpus.Read(b, "jfr", "cortex-dev-01__kafka-0__cpu_lock0_alloc0__0.jfr.gz")
	for _, mode := range []string{"local", "fileblob"} {
		b.Run(mode, func(b *testing.B) {
			opts := store.Options{}
			if mode == "fileblob" {
				fb, err := fileblob.OpenBucket(b.TempDir(), &fileblob.Options{Metadata: fileblob.MetadataDontWrite})
				if err != nil {
					b.Fatal(err)
				}
				defer fb.Close()
				opts.Bucket, opts.FlushInterval, opts.Role = objstore.New(fb), time.Hour, store.RoleIngest
			}
			db, err := store.Open(b.TempDir(), opts)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			s := newServer(b, Config{Store: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			var cpu time.Duration
			i := 0
			for b.Loop() {
				from := 1764000000000 + i
				q := url.Values{"name": {"app.cpu{spark_app_id=app-1,spark_executor_id=1}"}, "format": {"jfr"},
					"from": {strconv.Itoa(from)}, "until": {strconv.Itoa(from + 10000)}}.Encode()
				cpu += ingestOne(b, s, q, body, "")
				i++
				if i%50 == 0 && opts.Bucket != nil {
					before := cpuTime()
					if err := db.Flush(context.Background()); err != nil {
						b.Fatal(err)
					}
					cpu += cpuTime() - before
				}
			}
			b.ReportMetric(float64(cpu.Microseconds())/float64(i)/1000, "cpu-ms/upload")
		})
	}
}
