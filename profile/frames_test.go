package profile

import "testing"

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
