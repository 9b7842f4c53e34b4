package jfr

import "strings"

// mergeGenerated gives classes the JVM generates at run time one name per
// origin, so that their frames merge in flame graphs instead of splitting
// into one per instance:
//
//	jdk/internal/reflect/GeneratedMethodAccessor31  → jdk/internal/reflect/GeneratedMethodAccessor_
//	a/B$$Lambda$669.0x0000000800fd7318              → a/B$$Lambda_
//	a/B$$Lambda$613/672746064 (JDK 8)               → a/B$$Lambda_
//	a/B$$Lambda.0x00007ffa600c4da0 (JDK 21)         → a/B$$Lambda_
//	a/B$$Lambda$lambda$wrap$2$263.0x00000000000100dd → a/B$$Lambda$lambda$wrap$2_
//	a/B$$EnhancerBySpringCGLIB$$1234abcd            → a/B$$EnhancerBySpringCGLIB$$_
//
// Native libraries that Java code extracts to a temporary file with a
// random name get one name per library (see mergeTempLibrary); a name that
// is the same on every run (async-profiler's own library) stays. The names
// jfr-parser, and so Pyroscope, merges are merged alike, so that profiles
// compare across the tools; so are the JVM's other reflection accessors and
// the libraries Spark's codecs extract (lz4-java, snappy-java).
func mergeGenerated(name string) string {
	if lib, ok := mergeTempLibrary(name); ok {
		return lib
	}
	for _, p := range []string{
		"jdk/internal/reflect/GeneratedMethodAccessor",
		"jdk/internal/reflect/GeneratedConstructorAccessor",
		"jdk/internal/reflect/GeneratedSerializationConstructorAccessor",
		"sun/reflect/GeneratedMethodAccessor",
		"sun/reflect/GeneratedConstructorAccessor",
	} {
		if rest, ok := strings.CutPrefix(name, p); ok && isDigits(rest) {
			return p + "_"
		}
	}
	if i := strings.Index(name, "$$EnhancerBySpringCGLIB$$"); i > 0 {
		return name[:i+len("$$EnhancerBySpringCGLIB$$")] + "_"
	}
	const lambda = "$$Lambda"
	for end := len(name); ; {
		i := strings.LastIndex(name[:end], lambda)
		if i <= 0 {
			return name
		}
		rest := name[i+len(lambda):]
		// rest is an optional name part ("$lambda$wrap$2"), shortest
		// first, then the instance suffix.
		for j := 0; j <= len(rest); j++ {
			if (j == 0 || isLambdaName(rest[:j])) && isInstanceSuffix(rest[j:]) {
				return name[:i+len(lambda)] + rest[:j] + "_"
			}
		}
		end = i + len(lambda) - 1
	}
}

// isLambdaName reports whether s is "$" followed by a letter and then
// letters, digits, '_' or '$'.
func isLambdaName(s string) bool {
	if len(s) < 2 || s[0] != '$' || !isLetter(s[1]) {
		return false
	}
	for i := 2; i < len(s); i++ {
		if c := s[i]; !isLetter(c) && !isDigit(c) && c != '_' && c != '$' {
			return false
		}
	}
	return true
}

// isInstanceSuffix reports whether s is what tells lambda instances apart:
// an optional "$<digits>" then "." or "/" and a hexadecimal or decimal
// number (with or without "0x"), or just an optional "$" and digits.
func isInstanceSuffix(s string) bool {
	if rest, ok := strings.CutPrefix(s, "$"); ok && isDigits(rest) {
		return true
	}
	if isDigits(s) {
		return true
	}
	if strings.HasPrefix(s, "$") {
		k := 1
		for k < len(s) && isDigit(s[k]) {
			k++
		}
		if k == 1 {
			return false
		}
		s = s[k:]
	}
	if s == "" || (s[0] != '.' && s[0] != '/') {
		return false
	}
	s = strings.TrimPrefix(s[1:], "0x")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isDigit(c) && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// mergeTempLibrary names a native library extracted to a temporary file
// (as async-profiler names a native frame's class) by the library alone:
//
//	/tmp/libzstd-jni-1.5.1-16931311898282279136.so (deleted) → libzstd-jni-_.so
//	liblz4-java-8190263467891720291.so                        → liblz4-java-_.so
//	snappy-1.1.8-6fb9393a-…-libsnappyjava.so                  → snappy-_-libsnappyjava.so
//	libamazonCorrettoCryptoProvider109b39cf33c563eb.so        → libamazonCorrettoCryptoProvider_.so
func mergeTempLibrary(name string) (string, bool) {
	base, _ := strings.CutSuffix(name, " (deleted)")
	if !strings.HasSuffix(base, ".so") {
		return "", false
	}
	if i := strings.LastIndexByte(base, '/'); i >= 0 {
		if strings.Contains(base, "amazonCorrettoCryptoProvider") {
			return "libamazonCorrettoCryptoProvider_.so", true
		}
		base = base[i+1:]
	}
	lib := strings.TrimSuffix(base, ".so")
	switch {
	case strings.HasPrefix(lib, "libzstd-jni-"):
		return "libzstd-jni-_.so", true
	case strings.HasPrefix(lib, "liblz4-java-") && isDigits(lib[len("liblz4-java-"):]):
		return "liblz4-java-_.so", true
	case strings.HasPrefix(lib, "snappy-") && strings.HasSuffix(lib, "-libsnappyjava"):
		return "snappy-_-libsnappyjava.so", true
	case strings.HasPrefix(lib, "libamazonCorrettoCryptoProvider"):
		return "libamazonCorrettoCryptoProvider_.so", true
	}
	return "", false
}
