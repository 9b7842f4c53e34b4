package synth

import "bytes"

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
