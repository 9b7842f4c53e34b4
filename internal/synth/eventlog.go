package synth

import (
	"bytes"
	"regexp"
	"strconv"
)

// EventLogBomb returns an event log of an application start and one event
// holding value as its field "x": a line the ingest memory cannot hold,
// in bytes or in what decoding it costs.
func EventLogBomb(value []byte) []byte {
	var b bytes.Buffer
	b.WriteString(`{"Event":"SparkListenerApplicationStart","App Name":"bomb","App ID":"app-bomb","Timestamp":1}` + "\n")
	b.WriteString(`{"Event":"SparkListenerBomb","x":`)
	b.Write(value)
	b.WriteString("}\n")
	return b.Bytes()
}

// LongJSONString is a JSON string of n bytes.
func LongJSONString(n int) []byte {
	return append(append([]byte{'"'}, bytes.Repeat([]byte("x"), n-2)...), '"')
}

// ManyJSONValues is a JSON array of about n bytes of n/2 numbers: decoding
// it costs hundreds of times its size.
func ManyJSONValues(n int) []byte {
	return append(append([]byte{'['}, bytes.Repeat([]byte("0,"), n/2)...), '0', ']')
}

// eventTimes are the epoch-millisecond times of an event log's events.
var eventTimes = regexp.MustCompile(`"(Timestamp|[A-Za-z ]*Time|time)":(\d{13})\b`)

// LaterRun rewrites an event log as a later run of its application: the
// app id oldID replaced by newID, every time a day on and stretched by
// slower from the log's first: each duration slower times as long, with
// the same tasks, data and CPU time.
func LaterRun(log []byte, oldID, newID string, slower float64) []byte {
	start := int64(-1)
	for _, m := range eventTimes.FindAllSubmatch(log, -1) {
		if v, _ := strconv.ParseInt(string(m[2]), 10, 64); start < 0 || v < start {
			start = v
		}
	}
	out := eventTimes.ReplaceAllFunc(log, func(b []byte) []byte {
		m := eventTimes.FindSubmatch(b)
		v, _ := strconv.ParseInt(string(m[2]), 10, 64)
		v = start + 86_400_000 + int64(float64(v-start)*slower)
		return []byte(`"` + string(m[1]) + `":` + strconv.FormatInt(v, 10))
	})
	return bytes.ReplaceAll(out, []byte(oldID), []byte(newID))
}
