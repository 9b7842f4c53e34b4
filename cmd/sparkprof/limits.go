package main

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/sparkprof/sparkprof/internal/cgroup"
	"github.com/sparkprof/sparkprof/internal/connlimit"
	"github.com/sparkprof/sparkprof/internal/english"
)

// sizeUnits are the units a size flag takes, longest suffix first.
var sizeUnits = []struct {
	suffix string
	n      int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"B", 1},
}

// parseSize reads a size flag: bytes, or a number with a unit (512MiB,
// 1GiB, 900MB), as GOMEMLIMIT takes them.
func parseSize(s string) (int64, error) {
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range sizeUnits {
		if n, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(n), u.n
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 || f*float64(mult) > 1<<62 {
		return 0, fmt.Errorf("size %q: want bytes or a number with a unit, such as 512MiB or 2GiB", s)
	}
	return int64(f * float64(mult)), nil
}

// memoryLimits are the server's memory budgets, as the flags and the
// container set them.
type memoryLimits struct {
	// runtime is the Go runtime's memory limit (0: none), and from where
	// it comes, for the log.
	runtime int64
	source  string
	// ingest is the ingest memory budget.
	ingest int64
}

// defaultMemoryLimit is the memory limit when neither a flag, GOMEMLIMIT
// nor a container sets one: nine tenths of 1 GiB, as of a container's
// limit, leaving room for what the runtime does not count (the
// executable's pages), so that the process stays under 1 GiB. Enough for
// 200 executors sending every 10 s with a dashboard open (BENCHMARKS.md,
// "A fleet under load").
const defaultMemoryLimit = 1 << 30 / 10 * 9

// defaultIngestMemory is the ingest memory under the default memory
// limit: one large import (a jvm-profiler stack file of the corpus
// decodes into 350 MiB) must fit beside the steady state the default
// limit is sized for, which the runtime's soft limit then lets it pass.
const defaultIngestMemory = 1 << 30

// resolveMemory works out the memory budgets: --memory-limit, else
// GOMEMLIMIT (which the runtime read already), else nine tenths of the
// container's limit, else defaultMemoryLimit; --ingest-memory, else a
// quarter of the memory limit, or defaultIngestMemory under the default
// limit.
func resolveMemory(memFlag, ingestFlag string) (memoryLimits, error) {
	var m memoryLimits
	switch {
	case memFlag != "":
		n, err := parseSize(memFlag)
		if err != nil {
			return m, fmt.Errorf("%w: --memory-limit: %v", errUsage, err)
		}
		m.runtime, m.source = n, "--memory-limit"
	case os.Getenv("GOMEMLIMIT") != "":
		m.runtime, m.source = debug.SetMemoryLimit(-1), "GOMEMLIMIT"
	default:
		if n, ok := cgroup.MemoryLimit(); ok {
			m.runtime, m.source = n/10*9, "nine tenths of the container's limit"
		} else {
			m.runtime, m.source, m.ingest = defaultMemoryLimit, "the default, nine tenths of 1 GiB (no --memory-limit, GOMEMLIMIT or container limit)", defaultIngestMemory
		}
	}
	if m.ingest == 0 {
		m.ingest = m.runtime / 4
	}
	if ingestFlag != "" {
		n, err := parseSize(ingestFlag)
		if err != nil || n < 1<<20 {
			return m, fmt.Errorf("%w: --ingest-memory %q: want at least 1MiB", errUsage, ingestFlag)
		}
		m.ingest = n
	}
	return m, nil
}

// sizeStore sizes the store's head (--head-mb) and block cache
// (--block-cache-mb) within the memory limit, a quarter and an eighth of
// it, unless their flags were given (set).
func (m memoryLimits) sizeStore(f *serveFlags, set map[string]bool) {
	if !set["head-mb"] {
		f.headMB = min(f.headMB, max(16, m.runtime/4>>20))
	}
	if !set["block-cache-mb"] {
		f.cacheMB = min(f.cacheMB, max(16, m.runtime/8>>20))
	}
}

// cacheSplit splits --block-cache-mb (MiB) into the bytes that keep
// blocks' parts and those that keep their sums (query.Config.SumsCacheBytes):
// a quarter and three quarters. A dashboard reads each block's sums, a few
// hundred KB, at every refresh, and its parts, ten times larger, once to
// make them: under a fleet's load (bench/server/load.sh, five minutes) the
// parts' cache hit 1 read of 593, and render p99 fell from 3.9 to 0.9 s
// once the sums of the 128 blocks in range fitted.
func cacheSplit(mb int64) (parts, sums int64) {
	return mb << 20 / 4, mb << 20 * 3 / 4
}

// apply sets the Go runtime's memory limit, and says what the budgets are.
func (m memoryLimits) apply(log *slog.Logger) {
	if m.source != "GOMEMLIMIT" {
		debug.SetMemoryLimit(m.runtime)
	}
	log.Info("memory limit", "limit", english.Bytes(m.runtime), "from", m.source, "ingest_memory", english.Bytes(m.ingest))
}

// maxOpenSegments bounds the store's log segments held open, one per
// tenant that uploads (store.Options.MaxOpenSegments).
const maxOpenSegments = 256

// limitConnections bounds ln's connections to what the file descriptor
// limit leaves beside the store's open segments and a reserve for its
// block reads, keys files and the like: past it, connections are
// answered 503 (plain ones) and closed, never left waiting in accept.
func limitConnections(ln net.Listener, plain bool) net.Listener {
	limit := connlimit.FileLimit()
	if limit == 0 {
		return ln
	}
	return connlimit.New(ln, max(limit-maxOpenSegments-64, 16), plain)
}
