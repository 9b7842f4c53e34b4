package eventlog

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
)

// zipSep joins a zip archive's path and an entry name in a part name.
const zipSep = "!/"

func isZip(name string) bool {
	f, err := os.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 4)
	n, _ := io.ReadFull(f, head)
	return bytes.Equal(head[:n], []byte("PK\x03\x04"))
}

// zipParts lists the event-log parts of a zip as the History Server's
// /logs download serves: one log file, or the parts of a rolling log in
// its directory.
func zipParts(name string) ([]string, error) {
	zr, err := zip.OpenReader(name)
	if err != nil {
		return nil, fmt.Errorf("eventlog: %s: %w", name, err)
	}
	defer zr.Close()
	var files, rolling []string
	var dir string
	for _, f := range zr.File {
		if f.FileInfo().IsDir() {
			continue
		}
		base := path.Base(f.Name)
		if strings.HasPrefix(base, "events_") || base == "eventlog" || strings.HasPrefix(base, "eventlog-") {
			rolling = append(rolling, base)
			dir = path.Dir(f.Name)
			continue
		}
		if strings.HasPrefix(base, "appstatus_") {
			continue
		}
		files = append(files, f.Name)
	}
	var entries []string
	switch {
	case len(rolling) > 0:
		ordered, err := orderParts(name, rolling)
		if err != nil {
			return nil, err
		}
		for _, b := range ordered {
			entries = append(entries, path.Join(dir, b))
		}
	case len(files) == 1:
		entries = files
	case len(files) == 0:
		return nil, fmt.Errorf("eventlog: %s: the zip holds no event log", name)
	default:
		return nil, fmt.Errorf("eventlog: %s: the zip holds %d logs (%s, ...); extract it and name one", name, len(files), files[0])
	}
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = name + zipSep + e
	}
	return out, nil
}

func splitZipPart(name string) (archive, entry string, ok bool) {
	i := strings.Index(name, zipSep)
	if i < 0 {
		return "", "", false
	}
	return name[:i], name[i+len(zipSep):], true
}

// openZipEntry opens one entry of a zip archive.
func openZipEntry(archive, entry string) (io.Reader, func(), error) {
	zr, err := zip.OpenReader(archive)
	if err != nil {
		return nil, nil, fmt.Errorf("eventlog: %s: %w", archive, err)
	}
	for _, f := range zr.File {
		if f.Name == entry {
			rc, err := f.Open()
			if err != nil {
				zr.Close()
				return nil, nil, fmt.Errorf("eventlog: %s%s%s: %w", archive, zipSep, entry, err)
			}
			return rc, func() { rc.Close(); zr.Close() }, nil
		}
	}
	zr.Close()
	return nil, nil, fmt.Errorf("eventlog: %s: no entry %s", archive, entry)
}
