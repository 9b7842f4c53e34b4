package analysis

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sparkprof/sparkprof/format"
	foldedformat "github.com/sparkprof/sparkprof/format/folded"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/spark"
)

// patternIDs returns the patterns of rs.
func patternIDs(rs []Recommendation) []string {
	var ids []string
	for _, r := range rs {
		ids = append(ids, r.Pattern)
	}
	slices.Sort(ids)
	return ids
}

// profilesOnly is the analysis input of profiles alone.
func profilesOnly(ps ...*profile.Profile) Input {
	return Input{App: &spark.App{Summary: spark.Summary{FailureReasons: map[string]int{}}}, Profiles: ps}
}

// TestPatternsCorpus: the patterns the corpus's real profiles show, and
// none on those that do not show any.
func TestPatternsCorpus(t *testing.T) {
	tests := []struct {
		rel  []string
		want []string
		// frame is the first frame the first recommendation names.
		frame string
	}{
		// Phil's Scala straggler: the task thread appends to a List.
		{[]string{"jvm-profiler", "phil_stopwatch", "ProfileStraggler", "Stacktrace.json.gz"}, []string{"list-append"}, "scala.collection.SeqLike$class.$colon$plus"},
		// The PySpark straggler and slacker: task threads read from their
		// Python workers.
		{[]string{"jvm-profiler", "phil_stopwatch", "profile_straggler", "Stacktrace.json.gz"}, []string{"python-wait"}, "org.apache.spark.api.python.BasePythonRunner$ReaderIterator.hasNext"},
		{[]string{"jvm-profiler", "phil_stopwatch", "profile_slacker", "CombinedStack.json.gz"}, []string{"python-wait"}, "org.apache.spark.api.python.BasePythonRunner$ReaderIterator.hasNext"},
		// A Kafka broker: threads wait for the log's lock, and decompress
		// snappy batches.
		{[]string{"jfr", "cortex-dev-01__kafka-0__cpu_lock0_alloc0__0.jfr.gz"}, []string{"compression", "lock-contention"}, "kafka.log.UnifiedLog.append"},
		{[]string{"jfr", "dump1.jfr.gz"}, nil, ""},
		{[]string{"jfr", "dump2.jfr.gz"}, nil, ""},
		{[]string{"jfr", "wall.jfr.gz"}, nil, ""},
		{[]string{"jfr", "async-profiler.jfr.gz"}, nil, ""},
		{[]string{"jfr", "FastSlow_2024_01_16_180855.jfr.gz"}, nil, ""},
		{[]string{"jvm-profiler", "phil_stopwatch", "ProfileStraggler", "CpuAndMemory.json.gz"}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.rel[len(tt.rel)-1], func(t *testing.T) {
			p, err := format.Load(corpus.Path(t, tt.rel...), format.Options{})
			if err != nil {
				t.Fatal(err)
			}
			rs := Recommend(profilesOnly(p), DefaultThresholds)
			if got := patternIDs(rs); !slices.Equal(got, tt.want) {
				t.Fatalf("patterns %v, want %v: %+v", got, tt.want, rs)
			}
			if tt.frame == "" {
				return
			}
			r := rs[0]
			if r.Frames[0].Frame != tt.frame || r.Share < DefaultThresholds.PatternShare || r.Focus == "" || r.Suggestion == "" {
				t.Errorf("recommendation %+v, want its first frame %s", r, tt.frame)
			}
		})
	}
}

// TestPatternsShares checks the shares on ProfileStraggler against its
// README: the task thread's running samples are all in JobStraggler's
// List appends (1,069 samples of task 0 and those of tasks 1 and 2), and
// on profile_straggler, the task threads read from their Python workers.
func TestPatternsShares(t *testing.T) {
	p, err := format.Load(corpus.Path(t, "jvm-profiler", "phil_stopwatch", "ProfileStraggler", "Stacktrace.json.gz"), format.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rs := Recommend(profilesOnly(p), DefaultThresholds)
	if len(rs) != 1 || rs[0].Share < 0.99 || rs[0].Type != "samples" || rs[0].Severity != Warning ||
		!strings.Contains(rs[0].Frames[0].Caller, "JobStraggler") {
		t.Errorf("recommendations %+v", rs)
	}
	// Raising the share past it leaves nothing.
	th := DefaultThresholds
	th.PatternShare = 1.01
	if rs := Recommend(profilesOnly(p), th); len(rs) != 0 {
		t.Errorf("share 101%%: %+v", rs)
	}
}

// TestPatternsJVM runs bench/patterns/Patterns.java, a small program that
// does one code pattern per record in threads named as Spark's task
// threads, under the JDK's Flight Recorder, and checks that the
// recommendations of each recording name its pattern and no other, and
// that a recording of plain arithmetic names none.
func TestPatternsJVM(t *testing.T) {
	if testing.Short() {
		t.Skip("runs JVMs")
	}
	if _, err := exec.LookPath("javac"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("javac not installed")
		}
		t.Skip("javac not installed")
	}
	dir := t.TempDir()
	if out, err := exec.Command("javac", "-d", dir, filepath.Join("..", "bench", "patterns", "Patterns.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	want := map[string][]string{
		"regex":         {"regex-compile"},
		"exceptions":    {"exceptions"},
		"logging":       {"logging"},
		"serialization": {"java-serialization"},
		"reflection":    {"reflection"},
		"boxing":        {"boxing"},
		"compression":   {"compression"},
		"lock":          {"lock-contention"},
		"dates":         {"date-format"},
		"churn":         {"alloc-hotspots"},
		"clean":         nil,
	}
	var mu sync.Mutex
	recordings := map[string]*profile.Profile{}
	sem := make(chan bool, 2)
	var wg sync.WaitGroup
	for mode := range want {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- true
			defer func() { <-sem }()
			p, err := recordPattern(dir, mode)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("%s: %v", mode, err)
				return
			}
			recordings[mode] = p
		}()
	}
	wg.Wait()
	for mode, ids := range want {
		p := recordings[mode]
		if p == nil {
			continue
		}
		in := profilesOnly(p)
		rs := Recommend(in, DefaultThresholds)
		if got := patternIDs(rs); !slices.Equal(got, ids) {
			t.Errorf("%s: patterns %v, want %v: %+v", mode, got, ids, rs)
		}
		// Each names the program's own code: the frame, or its caller.
		for _, r := range rs {
			if len(r.Frames) == 0 || !strings.Contains(r.Frames[0].Frame+" "+r.Frames[0].Caller, "Patterns.") || r.Focus == "" {
				t.Errorf("%s: recommendation %+v", mode, r)
			}
		}
		// The churning JVM's GC records make a gc finding; the others'
		// do not.
		gc := find(Analyze(in, DefaultThresholds), KindGC)
		if (mode == "churn") != (len(gc) == 1) {
			t.Errorf("%s: gc findings %+v", mode, gc)
		}
	}
}

// jacksonJars are Debian's Jackson jars (libjackson2-databind-java), which
// JsonPatterns.java parses with.
var jacksonJars = []string{"/usr/share/java/jackson-databind.jar", "/usr/share/java/jackson-core.jar", "/usr/share/java/jackson-annotations.jar"}

// TestPatternsJSON runs bench/patterns/JsonPatterns.java, which parses a
// JSON document per record with Jackson in a task thread, under the
// Flight Recorder: its recommendations name json-parsing and no other,
// with the program's own code as the caller.
func TestPatternsJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a JVM")
	}
	missing := ""
	if _, err := exec.LookPath("javac"); err != nil {
		missing = "javac"
	}
	for _, jar := range jacksonJars {
		if _, err := os.Stat(jar); err != nil {
			missing = jar
		}
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not installed (apt-get install openjdk-17-jdk-headless libjackson2-databind-java)", missing)
		}
		t.Skipf("%s not installed", missing)
	}
	dir := t.TempDir()
	cp := strings.Join(append([]string{dir}, jacksonJars...), string(os.PathListSeparator))
	src := filepath.Join("..", "bench", "patterns")
	if out, err := exec.Command("javac", "-cp", cp, "-d", dir, filepath.Join(src, "Patterns.java"), filepath.Join(src, "JsonPatterns.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	jfr := filepath.Join(dir, "json.jfr")
	cmd := exec.Command("java", "-Xmx256m", "-XX:StartFlightRecording=filename="+jfr+",settings=profile,jdk.ExecutionSample#period=5ms",
		"-cp", cp, "JsonPatterns", "1000")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("java: %v\n%s", err, out)
	}
	p, err := format.Load(jfr, format.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rs := Recommend(profilesOnly(p), DefaultThresholds)
	if got := patternIDs(rs); !slices.Equal(got, []string{"json-parsing"}) {
		t.Fatalf("patterns %v, want [json-parsing]: %+v", got, rs)
	}
	r := rs[0]
	if !strings.HasPrefix(r.Frames[0].Frame, "com.fasterxml.jackson.") || !strings.Contains(r.Frames[0].Caller, "JsonPatterns") || r.Focus == "" {
		t.Errorf("recommendation %+v, want a Jackson frame called from JsonPatterns", r)
	}
}

// recordPattern runs Patterns.java's mode for a second of CPU time a
// thread under the Flight Recorder, sampling every 5 ms, and decodes the
// recording. The churning one gets a small heap, to collect often, and runs
// three seconds: its collections come to over a second (GCMinMs).
func recordPattern(classes, mode string) (*profile.Profile, error) {
	jfr := filepath.Join(classes, mode+".jfr")
	heap, cpu := "-Xmx256m", "1000"
	if mode == "churn" {
		heap, cpu = "-Xmx64m", "3000"
	}
	cmd := exec.Command("java", heap, "-XX:StartFlightRecording=filename="+jfr+",settings=profile,jdk.ExecutionSample#period=5ms",
		"-cp", classes, "Patterns", mode, cpu)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%v: %s", err, out)
	}
	return format.Load(jfr, format.Options{})
}

// TestPatternsSparkSerialization: Java serialization of records is
// recommended on, and Spark's own of tasks and RPC messages is not.
func TestPatternsSparkSerialization(t *testing.T) {
	tests := []struct {
		name  string
		stack string
		want  []string
	}{
		{"records written to a shuffle",
			taskStack + "org.apache.spark.scheduler.ShuffleMapTask.runTask;org.apache.spark.util.collection.ExternalSorter.writePartitionedMapOutput;org.apache.spark.serializer.JavaSerializationStream.writeObject;java.io.ObjectOutputStream.writeObject;java.io.ObjectOutputStream.writeObject0",
			[]string{"java-serialization"}},
		{"a task deserialised",
			taskStack + "org.apache.spark.serializer.JavaSerializerInstance.deserialize;org.apache.spark.serializer.JavaDeserializationStream.readObject;java.io.ObjectInputStream.readObject;java.io.ObjectInputStream.readObject0",
			nil},
		{"a task's status sent to the driver",
			taskStack + "org.apache.spark.executor.CoarseGrainedExecutorBackend.statusUpdate;org.apache.spark.rpc.netty.NettyRpcEndpointRef.send;org.apache.spark.rpc.netty.NettyRpcEnv.send;org.apache.spark.rpc.netty.RequestMessage.serialize;org.apache.spark.serializer.JavaSerializationStream.writeObject;java.io.ObjectOutputStream.writeObject",
			nil},
		{"an RPC message read",
			"java.lang.Thread.run;org.apache.spark.rpc.netty.NettyRpcEnv.deserialize;org.apache.spark.serializer.JavaDeserializationStream.readObject;java.io.ObjectInputStream.readObject",
			nil},
		// Seen in real Spark 4.3: Arrow's Schema parses JSON once a JVM.
		{"JSON parsed in a class's initialiser",
			taskStack + "org.apache.arrow.vector.types.pojo.Schema.<clinit>;com.fasterxml.jackson.databind.ObjectMapper.readerFor;com.fasterxml.jackson.databind.ObjectReader.readValue",
			nil},
		{"JSON parsed in a task",
			taskStack + "dev.example.Job.parse;com.fasterxml.jackson.databind.ObjectMapper.readValue;com.fasterxml.jackson.core.json.ReaderBasedJsonParser.nextToken",
			[]string{"json-parsing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := foldedPatterns(t, tt.stack+" 100\n"+taskStack+"dev.example.Job.compute 100\n"); !slices.Equal(got, tt.want) {
				t.Errorf("recommendations %v, want %v", got, tt.want)
			}
		})
	}
}

// taskStack begins the stacks of a Spark task thread.
const taskStack = "java.lang.Thread.run;java.util.concurrent.ThreadPoolExecutor$Worker.run;org.apache.spark.executor.Executor$TaskRunner.run;"

// foldedPatterns returns the patterns recommended on the folded stacks.
func foldedPatterns(t *testing.T, folded string) []string {
	t.Helper()
	p, err := foldedformat.Decode([]byte(folded), "test")
	if err != nil {
		t.Fatal(err)
	}
	return patternIDs(Recommend(profilesOnly(p), DefaultThresholds))
}

// TestPatternsBoxingCaller: boxing is recommended on when the app's code,
// or the code that evaluates its functions, boxes, and not when Spark's
// record plumbing does (stacks seen in real Spark 3.5's planted jobs).
func TestPatternsBoxingCaller(t *testing.T) {
	tests := []struct {
		name  string
		stack string
		want  []string
	}{
		{"coalesce numbering each record (PySpark's repartition)",
			taskStack + "org.apache.spark.rdd.RDD.$anonfun$coalesce$4;scala.runtime.BoxesRunTime.boxToInteger;java.lang.Integer.valueOf",
			nil},
		{"a Python UDF's results converted",
			taskStack + "org.apache.spark.sql.execution.python.EvaluatePython$$anonfun$$nestedInanonfun$makeFromJava$5$1.applyOrElse;scala.runtime.BoxesRunTime.boxToLong",
			nil},
		{"Pyrolite unpickling",
			taskStack + "org.apache.spark.api.python.SerDeUtil$.pythonToJava;net.razorvine.pickle.Unpickler.load_binint2;java.lang.Integer.valueOf",
			nil},
		{"the app's lambda",
			taskStack + "org.apache.spark.rdd.RDD.$anonfun$map$1;dev.example.Job.lambda$main$0;java.lang.Integer.valueOf",
			[]string{"boxing"}},
		{"the app's code through Scala's collections",
			taskStack + "dev.example.Job.sum;scala.collection.immutable.List.map;scala.runtime.BoxesRunTime.boxToInteger;java.lang.Integer.valueOf",
			[]string{"boxing"}},
		{"the code Spark generates for a query",
			taskStack + "org.apache.spark.sql.catalyst.expressions.GeneratedClass$GeneratedIteratorForCodegenStage1.processNext;java.lang.Integer.valueOf",
			[]string{"boxing"}},
		{"a typed UDF's arguments",
			taskStack + "org.apache.spark.sql.catalyst.expressions.ScalaUDF.eval;scala.runtime.BoxesRunTime.boxToInteger",
			[]string{"boxing"}},
		{"boxing with no caller but the runtime's",
			"java.lang.Thread.run;scala.runtime.BoxesRunTime.boxToInteger",
			[]string{"boxing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			folded := "# type=alloc_objects unit=count\n" + tt.stack + " 100\n" + taskStack + "dev.example.Job.compute;java.util.Arrays.copyOf 100\n"
			if got := foldedPatterns(t, folded); !slices.Equal(got, tt.want) {
				t.Errorf("recommendations %v, want %v", got, tt.want)
			}
		})
	}
}
