// Package format reads profiles of every format sparkprof knows — JFR,
// pprof, folded stacks, speedscope, py-spy's Chrome traces, Uber jvm-profiler and PySpark profiler
// records, Python's pstats — detecting the format by content, gunzipping transparently, and
// labelling profiles from Spark's profiler output paths.
package format
