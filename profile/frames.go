package profile

import (
	"strconv"
	"strings"
)

// GuessKind guesses the kind of a frame from its name: Python when it names
// a .py file, Java when it looks like a qualified JVM method ("pkg.Class.m",
// "pkg/Class.m", optionally with ":line"), native otherwise. Decoders of
// formats that do not record a frame's kind use it.
func GuessKind(name string) FrameKind {
	switch {
	case strings.Contains(name, ".py:") || strings.HasSuffix(name, ".py"):
		return KindPython
	case looksJava(name):
		return KindJava
	}
	return KindNative
}

func looksJava(name string) bool {
	if i := strings.LastIndexByte(name, ':'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			name = name[:i]
		}
	}
	if name == "" || strings.Contains(name, "::") || strings.Contains(name, ".so") {
		return false
	}
	dot := strings.LastIndexByte(name, '.')
	if dot <= 0 || dot == len(name)-1 {
		return false
	}
	c := name[0]
	if !(c == '_' || c == '$' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '_' || c == '$' || c == '.' || c == '/' || c == '<' || c == '>' || c == '-':
		default:
			return false
		}
	}
	return true
}

// ParsePythonFrame parses one Python stack entry, "file:function:line", as
// PySpark's profilers write them, into a KindPython frame named
// "file:function" with File and Line set. The file may itself contain
// colons; the function and line are the last two fields. An entry without
// a numeric line keeps Line 0, and one without any colon is taken as a bare
// function name.
func ParsePythonFrame(entry string) Frame {
	f := Frame{Name: entry, Kind: KindPython}
	rest := entry
	if i := strings.LastIndexByte(rest, ':'); i >= 0 {
		if n, err := strconv.ParseInt(rest[i+1:], 10, 32); err == nil && n >= 0 {
			f.Line = int32(n)
			rest = rest[:i]
		}
	}
	f.Name = rest
	if i := strings.LastIndexByte(rest, ':'); i >= 0 {
		f.File = rest[:i]
	}
	return f
}

// AddPythonStack interns a stack of Python entries given leaf first, each
// read by ParsePythonFrame, and returns its id.
func (p *Profile) AddPythonStack(leafFirst []string) StackID {
	s := NoStack
	for i := len(leafFirst) - 1; i >= 0; i-- {
		s = p.Push(s, p.AddFrame(ParsePythonFrame(leafFirst[i])))
	}
	return s
}
