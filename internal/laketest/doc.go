// Package laketest checks that the Parquet files of sparkprof's blocks
// are a table that a data lake's engine reads without sparkprof: its test
// runs the example query of docs/storage-format.md in DuckDB against
// blocks the store wrote and compares the answer with the query engine's.
//
// It is a module of its own, so that DuckDB (a cgo library) is neither a
// dependency of sparkprof nor built by its ordinary unit tests; the
// Makefile's unit target runs it.
package laketest
