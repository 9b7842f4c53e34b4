package profile

import (
	"strconv"
	"time"

	"github.com/sparkprof/sparkprof/internal/english"
)

// FormatValue renders v in unit for people: nanoseconds as a duration
// ("1.5 s", "12 ms"), bytes as a size ("4.0 MiB"), counts with thousands
// separators ("42,329").
func FormatValue(v int64, unit string) string {
	switch unit {
	case "nanoseconds":
		return english.Duration(time.Duration(v))
	case "bytes":
		return english.Bytes(v)
	}
	return groupThousands(v)
}

func groupThousands(v int64) string {
	s := strconv.FormatInt(v, 10)
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
