// Package cgroup reads the memory limit of the container a process runs
// in, from its Linux control group (v2 or v1), so that the server can size
// its memory budgets to it.
//
// Written here rather than taken from a library: the libraries that read
// cgroups set the Go runtime's memory limit themselves, where the server
// needs the limit's value for its own budgets too, and reading it is two
// files.
package cgroup

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// noLimit is the least value a cgroup reports for "no limit": v1 reports
// the largest page-aligned int64, v2 "max".
const noLimit = 1 << 62

// MemoryLimit returns the memory limit (bytes) of the process's control
// group, and false when it has none or none can be read (not Linux, no
// cgroup file system).
func MemoryLimit() (int64, bool) { return memoryLimit("/") }

// memoryLimit is MemoryLimit with the file system rooted at root.
func memoryLimit(root string) (int64, bool) {
	v2, v1 := ownPaths(filepath.Join(root, "proc/self/cgroup"))
	base := filepath.Join(root, "sys/fs/cgroup")
	// The process's own group first (a host's view), then the root of the
	// mount (a container's, whose cgroup namespace hides the path).
	candidates := []string{
		filepath.Join(base, v2, "memory.max"),
		filepath.Join(base, "memory.max"),
		filepath.Join(base, "memory", v1, "memory.limit_in_bytes"),
		filepath.Join(base, "memory", "memory.limit_in_bytes"),
	}
	for _, path := range candidates {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			return 0, false
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 || n >= noLimit {
			return 0, false
		}
		return n, true
	}
	return 0, false
}

// ownPaths reads the process's cgroup file: the path of its v2 group (the
// "0::" line) and of its v1 memory controller's group.
func ownPaths(file string) (v2, v1 string) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", ""
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2 = parts[2]
		case hasController(parts[1], "memory"):
			v1 = parts[2]
		}
	}
	return v2, v1
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}
