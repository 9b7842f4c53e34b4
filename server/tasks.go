package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/sparkprof/sparkprof/profile"
)

// taskWindow is one line of the agent's "tasks" part: a task's run on a
// thread (docs/agent.md).
type taskWindow struct {
	ThreadID     int64  `json:"threadId"`
	ThreadName   string `json:"threadName"`
	StageID      int    `json:"stageId"`
	StageAttempt int    `json:"stageAttempt"`
	Partition    int    `json:"partition"`
	TaskID       int64  `json:"taskId"`
	StartMs      int64  `json:"startMs"`
	EndMs        int64  `json:"endMs"` // 0 while running
}

func parseTaskWindows(data []byte) ([]taskWindow, error) {
	var out []taskWindow
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var w taskWindow
		if err := json.Unmarshal(line, &w); err != nil {
			return nil, fmt.Errorf("tasks line %d: %w", n, err)
		}
		out = append(out, w)
	}
	return out, sc.Err()
}

// attributeTasks labels samples that have a time and no task label with the
// task their thread ran at that time, as the executor plugin recorded it.
// This covers thread names that do not carry the task (Spark 3.0's
// "Executor task launch worker for task N", idle pool threads). It returns
// how many samples it labelled.
func attributeTasks(p *profile.Profile, windows []taskWindow) int {
	if len(windows) == 0 {
		return 0
	}
	byThread := map[string][]taskWindow{}
	for _, w := range windows {
		byThread[w.ThreadName] = append(byThread[w.ThreadName], w)
	}
	type key struct {
		labels profile.LabelSetID
		task   int64
	}
	memo := map[key]profile.LabelSetID{}
	n := 0
	for i := range p.Samples {
		s := &p.Samples[i]
		if s.Time == 0 || int(s.Thread) >= len(p.Threads) {
			continue
		}
		ws := byThread[p.Threads[s.Thread].Name]
		if len(ws) == 0 {
			continue
		}
		if _, ok := p.LabelSet(s.Labels).Get(profile.LabelTaskID); ok {
			continue
		}
		ms := s.Time / 1e6
		for _, w := range ws {
			if ms < w.StartMs || (w.EndMs != 0 && ms > w.EndMs) {
				continue
			}
			k := key{s.Labels, w.TaskID}
			id, ok := memo[k]
			if !ok {
				id = p.AddLabels(p.LabelSet(s.Labels).Merge(profile.Labels{
					{Name: profile.LabelStageID, Value: strconv.Itoa(w.StageID)},
					{Name: profile.LabelStageAttempt, Value: strconv.Itoa(w.StageAttempt)},
					{Name: profile.LabelTaskID, Value: strconv.FormatInt(w.TaskID, 10)},
					{Name: profile.LabelPartition, Value: strconv.Itoa(w.Partition)},
				}.Normalize()))
				memo[k] = id
			}
			s.Labels = id
			n++
			break
		}
	}
	return n
}
