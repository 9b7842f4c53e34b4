package profile

import (
	"slices"
	"testing"
)

func TestGuessKind(t *testing.T) {
	tests := []struct {
		name string
		want FrameKind
	}{
		{"java.lang.Thread.run", KindJava},
		{"java/lang/Thread.run:833", KindJava},
		{"App$$Lambda_.run", KindJava},
		{"Foo.<init>", KindJava},
		{"/a/helper.py:secondsSleep:44", KindPython},
		{"/a/helper.py", KindPython},
		{"__GI___libc_write", KindNative},
		{"std::vector<int>::push_back", KindNative},
		{"libc.so.6", KindNative},
		{".unknown_Java", KindNative},
		{"trailing.", KindNative},
		{"1digit.first", KindNative},
		{"[unknown]", KindNative},
		{"", KindNative},
	}
	for _, tt := range tests {
		if got := GuessKind(tt.name); got != tt.want {
			t.Errorf("GuessKind(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestParsePythonFrame(t *testing.T) {
	tests := []struct {
		in   string
		want Frame
	}{
		{"/a/job.py:processs:20", Frame{Name: "/a/job.py:processs", File: "/a/job.py", Line: 20, Kind: KindPython}},
		{"rdd.py:<lambda>:1055", Frame{Name: "rdd.py:<lambda>", File: "rdd.py", Line: 1055, Kind: KindPython}},
		{`C:\x\a.py:f:3`, Frame{Name: `C:\x\a.py:f`, File: `C:\x\a.py`, Line: 3, Kind: KindPython}},
		{"a.py:f", Frame{Name: "a.py:f", File: "a.py", Kind: KindPython}},
		{"main", Frame{Name: "main", Kind: KindPython}},
		{"a.py:f:-1", Frame{Name: "a.py:f:-1", File: "a.py:f", Kind: KindPython}},
	}
	for _, tt := range tests {
		if got := ParsePythonFrame(tt.in); got != tt.want {
			t.Errorf("ParsePythonFrame(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestAddPythonStack(t *testing.T) {
	p := New()
	s := p.AddPythonStack([]string{"job.py:leaf:20", "job.py:middle:10", "job.py:<module>:1"})
	var got []string
	for _, f := range p.Stack(s, nil) {
		got = append(got, p.Frames[f].Name)
	}
	want := []string{"job.py:<module>", "job.py:middle", "job.py:leaf"}
	if !slices.Equal(got, want) {
		t.Errorf("stack root first = %q, want %q", got, want)
	}
	if again := p.AddPythonStack([]string{"job.py:leaf:20", "job.py:middle:10", "job.py:<module>:1"}); again != s {
		t.Errorf("the same stack added again has id %d, want %d", again, s)
	}
	if s := p.AddPythonStack(nil); s != NoStack {
		t.Errorf("no entries: stack %d, want NoStack", s)
	}
}
