// Package folded reads and writes folded (collapsed) stacks, the text
// format of Brendan Gregg's stackcollapse scripts and flamegraph.pl: one
// line per stack, frames root first separated by ';', then a space and the
// sample count:
//
//	java.lang.Thread.run;com.example.Work.run;com.example.Work.compute 123
//
// Decode also accepts the count in brackets ("a;b [123]"), as grafana's
// jfr-parser writes its collapsed goldens, any run of spaces or tabs before
// the count, CRLF line ends and blank lines. A line holding only a count
// (" 610") is a sample with the empty stack. Lines starting with '#' are
// comments; one before the first stack may name the counts' sample type
// and unit, as Encode writes it with a header:
//
//	# type=cpu unit=nanoseconds
//
// Tools that read the format without it (flamegraph.pl, speedscope) skip
// the line, as it ends in no count.
//
// The format is simple enough that no library is warranted; it is read and
// written by hand here.
package folded

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/sparkprof/sparkprof/profile"
)

// MaxLineSize bounds one input line.
const MaxLineSize = 16 << 20

// maxTypes bounds the values of one bracket-form line.
const maxTypes = 16

// MaxCount bounds a count, and the sum of a file's counts of one type:
// 2^53, the largest integer a flame graph's total keeps exactly in the
// JSON numbers browsers and Grafana read, and far from overflowing the
// sums of many files. Past it Decode's error wraps profile.ErrValueRange.
const MaxCount = 1 << 53

// Sniff reports whether head, the start of a file, looks like folded
// stacks: its first complete lines (at most three, or the only line) each
// end in a count and none starts like JSON or binary data.
func Sniff(head []byte) bool {
	n := 0
	for len(head) > 0 && n < 3 {
		i := bytes.IndexByte(head, '\n')
		if i < 0 {
			if n > 0 {
				break // an incomplete last line proves nothing
			}
			i = len(head)
		}
		line := bytes.TrimRight(head[:i], " \t\r")
		head = head[min(i+1, len(head)):]
		if len(bytes.TrimSpace(line)) == 0 || line[0] == '#' {
			continue
		}
		if line[0] == '{' || line[0] == '[' || bytes.IndexByte(line, 0) >= 0 {
			return false
		}
		if _, _, err := splitLine(line, nil); err != nil {
			return false
		}
		n++
	}
	return n > 0
}

// splitLine splits a non-blank line into its stack and its counts,
// appended to vals: one count, or in the bracket form one or more.
func splitLine(line []byte, vals []int64) (stack []byte, _ []int64, err error) {
	var nums []byte
	if line[len(line)-1] == ']' {
		i := bytes.LastIndexByte(line, '[')
		if i < 0 {
			return nil, vals, fmt.Errorf("expected \"[count]\" at the end of the line, found no '['")
		}
		stack, nums = line[:i], line[i+1:len(line)-1]
	} else {
		i := bytes.LastIndexAny(line, " \t")
		if i < 0 {
			return nil, vals, fmt.Errorf("expected \"stack count\", found no count after the stack")
		}
		stack, nums = line[:i], line[i+1:]
	}
	for _, f := range bytes.Fields(nums) {
		v, err := strconv.ParseInt(string(f), 10, 64)
		switch {
		case errors.Is(err, strconv.ErrRange) && f[0] != '-', err == nil && v > MaxCount:
			return nil, vals, fmt.Errorf("count %s %w: more than 2^53 (%d), the largest a flame graph's total keeps exactly; scale the counts down",
				clip(f), profile.ErrValueRange, int64(MaxCount))
		case err != nil || v < 0:
			return nil, vals, fmt.Errorf("expected a non-negative integer count at the end of the line, found %q", clip(f))
		}
		vals = append(vals, v)
	}
	if len(vals) == 0 {
		return nil, vals, fmt.Errorf("expected a count at the end of the line, found %q", clip(nums))
	}
	return bytes.TrimRight(stack, " \t"), vals, nil
}

// Decode parses folded stacks. Samples have the type a header names, else
// profile.TypeSamples, and no time or thread; frame kinds are guessed from
// the names (see Frame).
// Lines of the bracket form may hold several values ("a;b [1 512]"), one
// per sample type; the format does not name them, so the second and later
// types are named "samples_2", "samples_3", ... with unit "count". On
// a malformed line, or one whose count takes a type's sum past MaxCount,
// Decode returns the profile of the lines before it and a
// *profile.DecodeError naming the line.
func Decode(data []byte, source string) (*profile.Profile, error) {
	p := profile.New()
	p.Source = source
	p.AddType(profile.TypeSamples)
	var vals, totals []int64 // totals by type
	frames := map[string]profile.FrameID{}
	lineNo := 0
	for line := range bytes.Lines(data) {
		lineNo++
		line = bytes.TrimRight(line, " \t\r\n")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if line[0] == '#' {
			if t, ok := parseHeader(line); ok && len(p.Samples) == 0 {
				p.Types[0] = t
			}
			continue
		}
		if len(line) > MaxLineSize {
			return p, &profile.DecodeError{Source: source, Offset: -1, Line: lineNo,
				Msg: fmt.Sprintf("line of %d bytes exceeds the %d-byte limit", len(line), MaxLineSize)}
		}
		var stack []byte
		var err error
		stack, vals, err = splitLine(line, vals[:0])
		if err != nil {
			return p, &profile.DecodeError{Source: source, Offset: -1, Line: lineNo, Err: err}
		}
		if len(vals) > maxTypes {
			return p, &profile.DecodeError{Source: source, Offset: -1, Line: lineNo,
				Msg: fmt.Sprintf("expected at most %d values in brackets, found %d", maxTypes, len(vals))}
		}
		for len(totals) < len(vals) {
			totals = append(totals, 0)
		}
		for i, v := range vals {
			if totals[i]+v > MaxCount {
				return p, &profile.DecodeError{Source: source, Offset: -1, Line: lineNo, Err: fmt.Errorf(
					"the %s counts' sum %w: more than 2^53 (%d) by this line, the largest a flame graph's total keeps exactly; scale the counts down or split the file",
					typeName(i), profile.ErrValueRange, int64(MaxCount))}
			}
		}
		s := profile.NoStack
		for len(stack) > 0 {
			name := stack
			if i := bytes.IndexByte(stack, ';'); i >= 0 {
				name, stack = stack[:i], stack[i+1:]
			} else {
				stack = nil
			}
			id, ok := frames[string(name)]
			if !ok {
				id = p.AddFrame(Frame(string(name)))
				frames[string(name)] = id
			}
			s = p.Push(s, id)
		}
		for i, v := range vals {
			for i >= len(p.Types) {
				p.AddType(profile.SampleType{Name: typeName(len(p.Types)), Unit: "count"})
			}
			p.Add(profile.Sample{Stack: s, Value: v, Type: profile.TypeID(i)})
			totals[i] += v
		}
	}
	return p, nil
}

// typeName names the sample type of the values of index i of a line:
// samples, samples_2, samples_3, ...
func typeName(i int) string {
	if i == 0 {
		return profile.TypeSamples.Name
	}
	return fmt.Sprintf("samples_%d", i+1)
}

// parseHeader returns the sample type a header line names
// ("# type=cpu unit=nanoseconds").
func parseHeader(line []byte) (profile.SampleType, bool) {
	var t profile.SampleType
	for _, f := range strings.Fields(string(line[1:])) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "type":
			t.Name = v
		case "unit":
			t.Unit = v
		}
	}
	return t, t.Name != "" && t.Unit != ""
}

// async-profiler's frame type suffixes.
var suffixKinds = []struct {
	suffix string
	kind   profile.FrameKind
}{
	{"_[j]", profile.KindJava},   // JIT-compiled
	{"_[i]", profile.KindJava},   // inlined
	{"_[0]", profile.KindJava},   // interpreted
	{"_[1]", profile.KindJava},   // C1-compiled
	{"_[k]", profile.KindKernel}, // kernel
}

// pySpyFrame matches py-spy's frames in its raw (folded) output:
// "function (file.py:line)", or "function (file.py)" with --nolineno.
var pySpyFrame = regexp.MustCompile(`^(.+) \((.+\.pyx?)(?::(\d+))?\)$`)

// Frame returns the frame a folded frame name stands for: async-profiler's
// type suffixes ("_[j]", "_[i]", "_[k]", ...) are removed and set the kind;
// py-spy's Python frames, "function (file.py:line)", become Python frames
// named "file.py:function" with File and Line set, as PySpark's and
// cProfile's are; otherwise the kind is guessed by profile.GuessKind.
func Frame(name string) profile.Frame {
	for _, sk := range suffixKinds {
		if strings.HasSuffix(name, sk.suffix) {
			return profile.Frame{Name: strings.TrimSuffix(name, sk.suffix), Kind: sk.kind}
		}
	}
	if m := pySpyFrame.FindStringSubmatch(name); m != nil {
		line, _ := strconv.ParseInt(m[3], 10, 32)
		return profile.Frame{Name: m[2] + ":" + m[1], File: m[2], Line: int32(max(line, 0)), Kind: profile.KindPython}
	}
	return profile.Frame{Name: name, Kind: profile.GuessKind(name)}
}

// EncodeOptions control Encode.
type EncodeOptions struct {
	// Type selects the sample type to write; the zero value selects the
	// profile's first type.
	Type profile.SampleType
	// Lines appends ":line" to frames with a known line number, so that a
	// flame graph shows one node per line rather than per function.
	Lines bool
	// Header writes a first line naming the sample type and its unit
	// ("# type=cpu unit=nanoseconds"), so that Decode reads the counts
	// back as what they are: CPU time, not a count of samples. It is left
	// out for profile.TypeSamples, what Decode takes counts for without.
	Header bool
}

// Encode writes the samples of one sample type as folded stacks, one line
// per distinct root-first path of frame names with the sum of its values,
// sorted by path. Frame names have ';' and line breaks replaced by '_' so
// that each line stays parseable. The empty stack is written as " N".
// Paths whose values sum to zero are left out.
func Encode(w io.Writer, p *profile.Profile, opts EncodeOptions) error {
	if len(p.Types) == 0 {
		return nil
	}
	typ := profile.TypeID(0)
	if opts.Type != (profile.SampleType{}) {
		var ok bool
		if typ, ok = p.TypeIndex(opts.Type); !ok {
			return fmt.Errorf("folded: profile has no sample type %v", opts.Type)
		}
	}
	byStack := map[profile.StackID]int64{}
	for _, s := range p.Samples {
		if s.Type == typ {
			byStack[s.Stack] += s.Value
		}
	}
	names := make([]string, len(p.Frames))
	for i, f := range p.Frames {
		names[i] = frameName(f, opts.Lines)
	}
	byPath := make(map[string]int64, len(byStack))
	var buf []profile.FrameID
	var sb strings.Builder
	for s, v := range byStack {
		buf = p.Stack(s, buf[:0])
		sb.Reset()
		for i, f := range buf {
			if i > 0 {
				sb.WriteByte(';')
			}
			sb.WriteString(names[f])
		}
		byPath[sb.String()] += v
	}
	paths := make([]string, 0, len(byPath))
	for path, v := range byPath {
		if v != 0 {
			paths = append(paths, path)
		}
	}
	sort.Strings(paths)
	bw := bufio.NewWriter(w)
	if t := p.Types[typ]; opts.Header && t != profile.TypeSamples {
		fmt.Fprintf(bw, "# type=%s unit=%s\n", headerField(t.Name), headerField(t.Unit))
	}
	for _, path := range paths {
		bw.WriteString(path)
		bw.WriteByte(' ')
		bw.WriteString(strconv.FormatInt(byPath[path], 10))
		bw.WriteByte('\n')
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("folded: %w", err)
	}
	return nil
}

var nameReplacer = strings.NewReplacer(";", "_", "\n", "_", "\r", "_")

// headerField returns s with the characters that would end a header field
// or line replaced by '_'.
func headerField(s string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '=' {
			return '_'
		}
		return r
	}, s)
}

func frameName(f profile.Frame, lines bool) string {
	name := nameReplacer.Replace(f.Name)
	if lines && f.Line > 0 {
		name += ":" + strconv.Itoa(int(f.Line))
	}
	return name
}

// clip shortens b for an error message.
func clip(b []byte) string {
	const n = 40
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
