package format

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/sparkprof/sparkprof/profile"
)

// profileSuffixes are the file names Expand picks up inside directories.
// Files named on the command line are always read, whatever their name.
var profileSuffixes = []string{
	".jfr", ".pprof", ".pb", ".prof", ".folded", ".collapsed", ".speedscope.json", ".json", ".pstats",
}

// Expand turns paths into a sorted list of files: a file stays as it is, a
// directory is walked for files whose names (less .gz) end in a known
// profile suffix, such as all profile-exec-*.jfr of a Spark app.
func Expand(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			out = append(out, p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type().IsRegular() && HasProfileName(d.Name()) {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("%s: no profile files (*.jfr, *.pprof, *.folded, *.json, *.pstats, optionally .gz) in directory", p)
		}
		sort.Strings(found)
		out = append(out, found...)
	}
	return out, nil
}

// HasProfileName reports whether a file name, less .gz, ends in a profile
// suffix (.jfr, .pprof, .folded, .json...): the files a directory walk
// reads as profiles.
func HasProfileName(name string) bool {
	name = strings.TrimSuffix(name, ".gz")
	if strings.HasSuffix(name, labelsSuffix) {
		return false
	}
	for _, s := range profileSuffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// labelsSuffix names a Pyroscope LabelsSnapshot saved beside the JFR whose
// async-profiler context ids it maps to labels: X.labels.pb[.gz] beside
// X.jfr[.gz], as Pyroscope's Java agent dumps an upload's two parts.
const labelsSuffix = ".labels.pb"

// IsLabelsName reports whether a file name, less .gz, is that of a
// LabelsSnapshot (X.labels.pb).
func IsLabelsName(name string) bool {
	return strings.HasSuffix(strings.TrimSuffix(name, ".gz"), labelsSuffix)
}

// LabelsBeside returns the LabelsSnapshot file beside the JFR at path
// (X.labels.pb or X.labels.pb.gz for X.jfr or X.jfr.gz), or "" if there is
// none.
func LabelsBeside(path string) string {
	stem, ok := strings.CutSuffix(strings.TrimSuffix(path, ".gz"), ".jfr")
	if !ok {
		return ""
	}
	return firstExisting(stem+labelsSuffix, stem+labelsSuffix+".gz")
}

// JFRBeside returns the JFR file a LabelsSnapshot at path belongs to, or ""
// if there is none.
func JFRBeside(path string) string {
	stem, ok := strings.CutSuffix(strings.TrimSuffix(path, ".gz"), labelsSuffix)
	if !ok {
		return ""
	}
	return firstExisting(stem+".jfr", stem+".jfr.gz")
}

func firstExisting(paths ...string) string {
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

var (
	// Spark 4's profiler plugin: <outputDir>/<appId>[_<attempt>]/profile-exec-<id>.jfr
	// or profile-driver.jfr; during Spark 4.0's development
	// <dfsDir>/<appId>/profile-<appName>-exec-<id>.jfr (the app's name, its
	// spaces made dashes); copies named profile-<appId>-exec-<id>.jfr.
	execFile    = regexp.MustCompile(`^profile-exec-([^/]+)\.jfr$`)
	oldExecFile = regexp.MustCompile(`^profile-(.+)-exec-([^/-]+)\.jfr$`)
	driverFile  = regexp.MustCompile(`^profile-driver\.jfr$`)
	// PySpark's profilers: sc.dump_profiles writes rdd_<id>.pstats and
	// (Spark 3's UDF profiler) udf_<id>.pstats, Spark 4's
	// spark.profile.dump udf_<id>_perf.pstats.
	pstatsFile = regexp.MustCompile(`^(rdd|udf)_([^/_]+)(?:_perf)?\.pstats$`)
	appDir     = regexp.MustCompile(`^((?:application_\d+_\d+)|(?:app-\d+-\d+)|(?:local-\d+)|(?:spark-[0-9a-f]+))(?:_(\d+))?$`)
)

// SparkPathLabels returns the labels a path written by Spark's profiler
// plugin implies: app id, attempt, executor id and role; or the RDD or UDF
// id of a profile PySpark dumped.
func SparkPathLabels(path string) profile.Labels {
	name := strings.TrimSuffix(filepath.Base(path), ".gz")
	var ls profile.Labels
	add := func(k, v string) { ls = append(ls, profile.Label{Name: k, Value: v}) }
	switch {
	case execFile.MatchString(name):
		add(profile.LabelExecutorID, execFile.FindStringSubmatch(name)[1])
		add(profile.LabelRole, "executor")
	case driverFile.MatchString(name):
		add(profile.LabelExecutorID, "driver")
		add(profile.LabelRole, "driver")
	case pstatsFile.MatchString(name):
		m := pstatsFile.FindStringSubmatch(name)
		if m[1] == "rdd" {
			add(profile.LabelRDDID, m[2])
		} else {
			add(profile.LabelUDFID, m[2])
		}
		return ls
	case oldExecFile.MatchString(name):
		m := oldExecFile.FindStringSubmatch(name)
		if a := appDir.FindStringSubmatch(m[1]); a != nil && a[2] == "" {
			add(profile.LabelAppID, m[1]) // else the app's name: its id is the directory's
		}
		add(profile.LabelExecutorID, m[2])
		add(profile.LabelRole, "executor")
	default:
		return nil
	}
	if m := appDir.FindStringSubmatch(filepath.Base(filepath.Dir(path))); m != nil {
		if _, ok := ls.Get(profile.LabelAppID); !ok {
			add(profile.LabelAppID, m[1])
		}
		if m[2] != "" {
			add(profile.LabelAppAttempt, m[2])
		}
	}
	return ls.Normalize()
}
