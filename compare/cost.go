package compare

import (
	"strconv"
	"strings"

	"github.com/sparkprof/sparkprof/spark"
)

// runCost is what the run's executors held over their lifetimes (until
// the run's end when a log does not say): cores, and memory as a cluster
// manager grants it, the executor memory and its overhead. An app in local
// mode, whose driver runs its tasks, holds the driver's.
func runCost(a *spark.App, durationMs int64, opt Options) Cost {
	local := spark.CountExecutors(a.Executors) == 0
	gib := executorGiB(sparkProps(a), local)
	end := a.StartMs + durationMs
	var coreMs, gibMs float64
	for _, e := range a.Executors {
		if (e.ID == "driver") != local {
			continue
		}
		until := e.RemovedMs
		if until == 0 || until > end {
			until = end
		}
		if life := float64(until - e.AddedMs); life > 0 {
			coreMs += float64(max(e.Cores, 1)) * life
			gibMs += gib * life
		}
	}
	const hour = 3_600_000
	c := Cost{CoreHours: round(coreMs/hour, 4), MemoryGiBHours: round(gibMs/hour, 4)}
	if opt.PricePerCoreHour > 0 || opt.PricePerGiBHour > 0 {
		p := round(c.CoreHours*opt.PricePerCoreHour+c.MemoryGiBHours*opt.PricePerGiBHour, 4)
		c.Price = &p
	}
	return c
}

// executorGiB is an executor's memory with its overhead, as YARN and
// Kubernetes grant it: spark.executor.memory (1g by default) and
// spark.executor.memoryOverhead (by default a tenth of it, 384 MiB at
// least); the driver's, spark.driver.memory and its overhead, for an app
// in local mode.
func executorGiB(props map[string]string, driver bool) float64 {
	role := "executor"
	if driver {
		role = "driver"
	}
	mem := sizeMiB(props["spark."+role+".memory"], 1024)
	overhead := sizeMiB(props["spark."+role+".memoryOverhead"], max(mem/10, 384))
	return float64(mem+overhead) / 1024
}

// sizeMiB reads a JVM memory string (512m, 4g, 1024 in MiB) in MiB.
func sizeMiB(s string, fallback int64) int64 {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return fallback
	}
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "t") || strings.HasSuffix(s, "tb"):
		mult = 1 << 20
	case strings.HasSuffix(s, "g") || strings.HasSuffix(s, "gb"):
		mult = 1 << 10
	case strings.HasSuffix(s, "k") || strings.HasSuffix(s, "kb"):
		mult = -1 << 10 // divide
	}
	n, err := strconv.ParseInt(strings.TrimRight(s, "tgmkb"), 10, 64)
	if err != nil || n <= 0 {
		return fallback
	}
	if mult < 0 {
		return max(n/-mult, 1)
	}
	return n * mult
}
