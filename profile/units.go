package profile

import (
	"fmt"
	"strconv"
)

// FormatValue renders v in unit for people: nanoseconds as "1.50 s" or
// "12.3 ms", bytes as "4.0 MiB", counts with thousands separators.
func FormatValue(v int64, unit string) string {
	switch unit {
	case "nanoseconds":
		return formatScaled(float64(v), []scale{{1e9, "s"}, {1e6, "ms"}, {1e3, "µs"}, {1, "ns"}})
	case "bytes":
		return formatScaled(float64(v), []scale{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}, {1, "B"}})
	}
	return groupThousands(v)
}

type scale struct {
	factor float64
	suffix string
}

func formatScaled(v float64, scales []scale) string {
	abs := v
	if abs < 0 {
		abs = -abs
	}
	for _, s := range scales {
		if abs >= s.factor || s.factor == 1 {
			x := v / s.factor
			switch {
			case s.factor == 1:
				return fmt.Sprintf("%.0f %s", x, s.suffix)
			case abs/s.factor >= 100:
				return fmt.Sprintf("%.0f %s", x, s.suffix)
			case abs/s.factor >= 10:
				return fmt.Sprintf("%.1f %s", x, s.suffix)
			default:
				return fmt.Sprintf("%.2f %s", x, s.suffix)
			}
		}
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
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
