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
	return parseJSONLines[taskWindow](data, "tasks", nil)
}

// parseJSONLines reads one of the agent's parts: a JSON value per line,
// blank lines skipped, each checked by check if given. Errors name the
// part and line.
func parseJSONLines[T any](data []byte, part string, check func(*T) error) ([]T, error) {
	if len(data) == 0 {
		return nil, nil // most uploads: no scanner or buffer
	}
	var out []T
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var v T
		err := json.Unmarshal(line, &v)
		if err == nil && check != nil {
			err = check(&v)
		}
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", part, n, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s part: %w", part, err)
	}
	return out, nil
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
