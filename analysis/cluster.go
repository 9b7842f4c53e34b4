package analysis

import (
	"fmt"
	"sort"
	"strings"

	"github.com/sparkprof/sparkprof/internal/english"
	"github.com/sparkprof/sparkprof/spark"
)

// exclusions returns the app's exclusions of executors and nodes (not
// their lifting), in time order.
func exclusions(app *spark.App) []spark.ExclusionEvent {
	out := []spark.ExclusionEvent{}
	for _, x := range app.Exclusion {
		if x.Excluded {
			out = append(out, x)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].TimeMs < out[j].TimeMs })
	return out
}

// excludedPhrase names the excluded executors and nodes for a failures
// finding's message, or nothing when none was.
func excludedPhrase(xs []spark.ExclusionEvent) string {
	if len(xs) == 0 {
		return ""
	}
	var named []string
	seen := map[string]bool{}
	for _, x := range xs {
		w := "executor " + x.ExecutorID
		if x.ExecutorID == "" {
			w = "node " + x.Host
		}
		if x.StageID >= 0 {
			w += fmt.Sprintf(" from stage %d", x.StageID)
		}
		if x.Reason != "" {
			w += " (" + x.Reason + ")"
		}
		if !seen[w] {
			seen[w] = true
			named = append(named, w)
		}
	}
	if len(named) > 4 {
		named = append(named[:4], fmt.Sprintf("%d more", len(named)-4))
	}
	return "; excluded after failures: " + strings.Join(named, ", ")
}

// failuresSuggestion is what a failures finding suggests.
func failuresSuggestion(excluded []spark.ExclusionEvent) string {
	s := "start with the biggest group; FetchFailed and ExecutorLostFailure point at lost executors or nodes, exceptions at the code (top frame)"
	if len(excluded) > 0 {
		s += "; an excluded executor or node ran no more tasks (spark.excludeOnFailure.*): if its failures came from the data or code rather than the node, exclusion only shrank the cluster"
	}
	return s
}

// reclaimed reports whether an executor's removal reason says the cluster
// took it back: decommissioned (Spark 3.1+, spot interruptions, Kubernetes
// and YARN graceful decommissioning) or preempted.
func reclaimed(reason string) bool {
	r := strings.ToLower(reason)
	return strings.Contains(r, "decommission") || strings.Contains(r, "preempt")
}

// decommissionRule: executors the cluster took back, told apart from
// crashes, with the task attempts that had to run again and the shuffle
// blocks fetched from them that were gone; and whether the driver's node
// went too.
func decommissionRule(a *appFacts, _ Thresholds) (Finding, bool) {
	app := a.App
	ev := &DecommissionEvidence{Executors: []LostExecutor{}, RerunTaskIDs: []int64{}}
	gone := map[string]bool{}
	hosts := map[string]bool{}
	for _, e := range app.Executors {
		if e.RemovedMs == 0 || !reclaimed(e.RemovalReason) {
			continue
		}
		host := e.Host
		gone[e.ID], hosts[e.Host] = true, true
		ev.Executors = append(ev.Executors, LostExecutor{ExecutorID: e.ID, Host: &host, TimeMs: e.RemovedMs, Reason: e.RemovalReason})
	}
	for _, l := range a.Logs {
		for _, x := range l.ExecutorEvents {
			if x.Kind != "decommission" {
				continue
			}
			if ev.LogEvents == nil {
				ev.LogEvents = map[string]int{}
			}
			ev.LogEvents[x.Kind]++
			if x.Executor == "driver" {
				ev.DriverHost = l.Source
			}
			if len(ev.Executors) < 50 {
				ev.Executors = append(ev.Executors, LostExecutor{ExecutorID: x.Executor, TimeMs: unixMs(x.Time), Reason: x.Message, Kind: x.Kind, Source: l.Source})
			}
		}
	}
	if len(ev.Executors) == 0 {
		return Finding{}, false
	}
	for _, t := range app.Tasks {
		switch {
		case t.FinishMs == 0 || t.Status == "SUCCESS":
		case gone[t.ExecutorID] || reclaimed(t.Message):
			ev.RerunTasks++
			ev.RerunMs += t.DurationMs()
			if len(ev.RerunTaskIDs) < 10 {
				ev.RerunTaskIDs = append(ev.RerunTaskIDs, t.ID)
			}
		case t.Reason == "FetchFailed" && fetchedFrom(t.Message, gone):
			ev.FetchFailures++
		}
	}
	for _, e := range app.Executors {
		if e.ID == "driver" && e.Host != "" && hosts[e.Host] {
			ev.DriverHost = e.Host
		}
	}
	msg := fmt.Sprintf("%s taken back by the cluster (decommissioned or preempted), not crashed", english.Plural(len(ev.Executors), "executor"))
	if ev.RerunTasks > 0 {
		msg += fmt.Sprintf("; %s on them ran again (%s of work lost)", english.Plural(ev.RerunTasks, "task attempt"), english.Millis(ev.RerunMs))
	}
	if ev.FetchFailures > 0 {
		msg += fmt.Sprintf("; %s of their shuffle output", english.Plural(ev.FetchFailures, "fetch failure"))
	}
	sugg := "spot or preemptible capacity was reclaimed: set spark.decommission.enabled with spark.storage.decommission.shuffleBlocks.enabled and rddBlocks.enabled, so executors hand their blocks over before they go"
	if a.App.Config["spark.decommission.enabled"] == "true" {
		sugg = "decommissioning was on: its blocks migrate, but running tasks still re-run; a shuffle service or storage on a fallback (spark.storage.decommission.fallbackStorage.path) keeps the rest"
	}
	if ev.DriverHost != "" {
		msg += "; the driver ran on a reclaimed node too (" + ev.DriverHost + ")"
		sugg += "; run the driver on on-demand capacity: when its node goes, the whole app does"
	}
	return Finding{Kind: KindDecommission, Severity: Warning, Message: msg, Suggestion: sugg, Evidence: ev,
		score: float64(ev.RerunMs)}, true
}

// fetchedFrom reports whether a FetchFailed message names the block
// manager of one of the executors in ids.
func fetchedFrom(msg string, ids map[string]bool) bool {
	_, rest, ok := strings.Cut(msg, "BlockManagerId(")
	if !ok {
		return false
	}
	id, _, _ := strings.Cut(rest, ",")
	return ids[strings.TrimSpace(id)]
}

// speculationRule: the app's speculative task attempts, how many won, and
// the executor time of the attempts thrown away.
func speculationRule(a *appFacts, th Thresholds) (Finding, bool) {
	sp := a.App.Speculation
	if sp.Attempts == 0 {
		return Finding{}, false
	}
	type key struct{ stage, attempt, index int }
	speculated := map[key]bool{}
	for _, t := range a.App.Tasks {
		if t.Speculative {
			speculated[key{t.StageID, t.StageAttempt, t.Index}] = true
		}
	}
	ev := &SpeculationEvidence{Speculation: sp, Stages: []int{}}
	var all int64
	stages := map[int]bool{}
	for _, t := range a.App.Tasks {
		all += t.DurationMs()
		if k := (key{t.StageID, t.StageAttempt, t.Index}); speculated[k] {
			stages[t.StageID] = true
			if t.FinishMs > 0 && t.Status != "SUCCESS" {
				ev.LostMs += t.DurationMs()
			}
		}
	}
	ev.Stages = sortedKeys(stages)
	ev.TaskShare = round2(share(ev.LostMs, all))
	sev := Info
	if share(ev.LostMs, all) >= th.SpeculationWasteShare {
		sev = Warning
	}
	msg := fmt.Sprintf("%s ran (%s of executor time) in %s; %d won the race, and attempts that lost it took %s (%.0f%% of all task time)",
		english.Plural(sp.Attempts, "speculative task attempt"), english.Millis(sp.TaskMs), english.Plural(len(ev.Stages), "stage"),
		sp.Won, english.Millis(ev.LostMs), 100*share(ev.LostMs, all))
	sugg := "speculative copies that win point at slow nodes or skewed partitions: find out which (the stragglers' hosts and data); copies that lose only take slots — raise spark.speculation.multiplier or spark.speculation.quantile, or set spark.speculation.minTaskRuntime"
	return Finding{Kind: KindSpeculation, Severity: sev, Message: msg, Suggestion: sugg, Evidence: ev, score: float64(ev.LostMs)}, true
}
