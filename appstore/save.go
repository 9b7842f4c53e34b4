package appstore

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/eventlog"
	"github.com/sparkprof/sparkprof/internal/syncfile"
	"github.com/sparkprof/sparkprof/store"
)

// A file is saved in three steps: written to a directory of its own under
// tmpDir, analysed there (with the other files of its bundle), and renamed
// into place only once it is. A file that cannot be analysed, or a stop at
// any step, leaves what was saved before as it was, and Open removes
// tmpDir.
const tmpDir = "tmp"

// tmpSuffix ends the names of the temporary files that earlier versions
// wrote beside the saved ones, which Open removes: no saved file's name
// ends in it (safeName).
const tmpSuffix = ".tmp"

// bundleDirPrefix marks bundle directories, so that no event log name can
// collide with one.
const bundleDirPrefix = "app-"

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// safeName turns name into a file name of its own, never one ending in
// tmpSuffix.
func safeName(name string) string {
	n := unsafeName.ReplaceAllString(filepath.Base(strings.ReplaceAll(name, "\\", "/")), "_")
	if base, ok := strings.CutSuffix(n, tmpSuffix); ok {
		n = base + "_tmp"
	}
	return n
}

// AddEventLog saves an event log for tenant and analyses it, drawing the
// memory of reading it from mem if not nil (input.Options.Memory). A log
// that cannot be analysed is not kept and leaves a saved one of the same
// name in place.
func (s *Store) AddEventLog(tenant, name string, data io.Reader, mem eventlog.Memory) (*analysis.Report, error) {
	f, err := s.stage(name, data)
	if err != nil {
		return nil, err
	}
	defer f.remove()
	path := filepath.Join(s.dir, store.TenantDir(tenant), filepath.Base(f.path))
	defer s.lock(path)()
	r, err := s.analyse([]string{f.path}, "", mem)
	if err != nil {
		return nil, hideDirs(err, f.dir)
	}
	if err := f.commit(path); err != nil {
		return nil, err
	}
	for i := range r.Sources {
		r.Sources[i].Path = filepath.Base(name)
	}
	s.put(tenant, r, "")
	return r, nil
}

// AddToBundle saves a container log or metric record file as part of the
// bundle named app and analyses the bundle again. The app id is the one
// the logs print, else the bundle name. A file the bundle cannot be
// analysed with is not kept, and leaves the bundle as it was: a saved
// file of the same name too. The memory of reading the bundle's event
// logs is drawn from mem, if not nil.
func (s *Store) AddToBundle(tenant, app, name string, data io.Reader, mem eventlog.Memory) (*analysis.Report, error) {
	f, err := s.stage(name, data)
	if err != nil {
		return nil, err
	}
	defer f.remove()
	bundle := safeName(app)
	dir := filepath.Join(s.dir, store.TenantDir(tenant), bundleDirPrefix+bundle)
	defer s.lock(dir)()
	paths, err := bundleFiles(dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	base := filepath.Base(f.path)
	paths = slices.DeleteFunc(paths, func(p string) bool { return filepath.Base(p) == base })
	paths = append(paths, f.path)
	slices.SortFunc(paths, func(a, b string) int { return strings.Compare(filepath.Base(a), filepath.Base(b)) })
	r, err := s.analyse(paths, bundle, mem)
	if err != nil {
		return nil, hideDirs(err, f.dir, dir)
	}
	if err := f.commit(filepath.Join(dir, base)); err != nil {
		return nil, err
	}
	s.put(tenant, r, bundle)
	return r, nil
}

// bundleFiles returns the paths of the files of the bundle directory dir,
// sorted, but for temporary ones.
func bundleFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, e := range entries {
		if !e.IsDir() && !strings.HasSuffix(e.Name(), tmpSuffix) {
			paths = append(paths, filepath.Join(dir, e.Name()))
		}
	}
	return paths, nil
}

// dirsHidden is an error whose text leaves out the directories of the
// files it names: a server's answers do not show where it keeps its data.
type dirsHidden struct {
	err  error
	dirs []string
}

// hideDirs returns err with dirs left out of its text.
func hideDirs(err error, dirs ...string) error { return &dirsHidden{err, dirs} }

func (e *dirsHidden) Error() string {
	msg := e.err.Error()
	for _, d := range e.dirs {
		msg = strings.ReplaceAll(msg, d+string(filepath.Separator), "")
	}
	return msg
}

func (e *dirsHidden) Unwrap() error { return e.err }

// staged is a file written under tmpDir, to be analysed before it is
// renamed into place.
type staged struct {
	dir  string // its own directory, which remove removes
	path string // the file, named as it will be saved
}

// stage writes data to a new file under tmpDir named as name is saved.
func (s *Store) stage(name string, data io.Reader) (*staged, error) {
	root := filepath.Join(s.dir, tmpDir)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(root, "import-")
	if err != nil {
		return nil, err
	}
	f := &staged{dir: dir, path: filepath.Join(dir, safeName(name))}
	if err := syncfile.Write(f.path, data); err != nil {
		f.remove()
		return nil, err
	}
	return f, nil
}

// commit renames the file to path, making its directory, in place of a
// file saved there before.
func (f *staged) commit(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.Rename(f.path, path)
}

// remove removes the file's directory, and the file if not committed.
func (f *staged) remove() { os.RemoveAll(f.dir) }

// pathLock serialises the changes to one saved event log or bundle, from
// their analysis to their renaming into place.
type pathLock struct {
	sync.Mutex
	users int // holders and waiters, guarded by Store.savingMu
}

// lock locks the changes to the saved event log or bundle at path, and
// returns the function that unlocks them.
func (s *Store) lock(path string) (unlock func()) {
	s.savingMu.Lock()
	l := s.saving[path]
	if l == nil {
		l = &pathLock{}
		s.saving[path] = l
	}
	l.users++
	s.savingMu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		s.savingMu.Lock()
		if l.users--; l.users == 0 {
			delete(s.saving, path)
		}
		s.savingMu.Unlock()
	}
}
