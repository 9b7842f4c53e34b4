package pstats

// The helpers the external tests (package pstats_test, which may import
// format) share with this package's.
var (
	CompareWithPython = compareWithPython
	PythonStats       = pythonStats
)
