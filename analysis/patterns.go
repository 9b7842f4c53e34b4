package analysis

import "regexp"

// A view is the samples of a profile a code pattern is measured in.
type view int

const (
	// viewCPU: CPU time, else the stack samples of running threads.
	viewCPU view = iota
	// viewWall: running threads' wall-clock or stack samples (a thread
	// reading a socket runs, but not on a CPU), else CPU time.
	viewWall
	// viewAlloc: allocated bytes, else allocations.
	viewAlloc
	// viewLock: time waiting for locks against CPU time, else blocked
	// threads' samples against running and blocked ones.
	viewLock
	// viewCPUAlloc: CPU time or allocations, where the pattern costs more
	// (the Flight Recorder does not sample a thread in the JVM's own code,
	// such as filling in an exception's stack, but sees its allocations).
	viewCPUAlloc
)

// A pattern is a costly way of writing code that a profile's stacks show:
// a sample is the pattern's when a frame of its stack matches frames (and,
// when set, its leaf matches leaf), no frame matches not, and, when notBy
// is set, the code that called the matching frame does not match notBy.
type pattern struct {
	id, title  string
	view       view
	frames     *regexp.Regexp
	leaf       *regexp.Regexp
	not        *regexp.Regexp
	notBy      *regexp.Regexp // of the caller: the nearest frame below that is not the JDK's or Scala's
	suggestion string
}

// socketReads are the leaves of a thread waiting for data on a socket.
const socketReads = `(socketRead|SocketInputStream\.read|NioSocketImpl\.(read|timedRead|park)|SocketDispatcher\.read|Net\.poll|DataInputStream\.read)`

// patterns are the code patterns recommendations look for, in the order
// of their recommendations among equals.
var patterns = []pattern{
	{id: "regex-compile", title: "regular expressions compiled in a hot path", view: viewCPU,
		frames:     regexp.MustCompile(`^java\.util\.regex\.Pattern\.(compile|<init>)$`),
		suggestion: "compile the Pattern once (a static field, a val in an object, a broadcast) instead of per record; String.split, replaceAll and matches compile their regex on every call"},
	{id: "exceptions", title: "exceptions created as control flow", view: viewCPUAlloc,
		frames:     regexp.MustCompile(`^java\.lang\.Throwable\.fillInStackTrace$`),
		suggestion: "an exception per record fills in its stack each time: test the input before parsing it (bad numbers, dates) instead of catching, or reuse an exception without a stack trace"},
	{id: "logging", title: "logging in per-record code", view: viewCPU,
		frames:     regexp.MustCompile(`^(org\.apache\.log4j\.|org\.apache\.logging\.log4j\.|ch\.qos\.logback\.|java\.util\.logging\.|org\.slf4j\.)`),
		suggestion: "log less inside tasks: raise the logger's level, guard debug lines (isDebugEnabled), and pass parameters instead of formatting messages that are never written"},
	{id: "java-serialization", title: "Java serialization", view: viewCPU,
		frames: regexp.MustCompile(`^java\.io\.Object(Output|Input)Stream\.(writeObject|readObject)`),
		// Spark (de)serialises tasks, closures and its RPC messages with Java
		// serialization whatever spark.serializer says: only records count.
		not:        regexp.MustCompile(`^(org\.apache\.spark\.serializer\.JavaSerializerInstance\.(serialize|deserialize)|org\.apache\.spark\.rpc\.netty\.(RequestMessage\.serialize|NettyRpcEnv\.(serialize|deserialize)))$`),
		suggestion: "use Kryo (spark.serializer=org.apache.spark.serializer.KryoSerializer, register the classes with spark.kryo.classesToRegister); Java serialization of records or large closures is several times slower"},
	{id: "reflection", title: "reflection per record", view: viewCPU,
		frames:     regexp.MustCompile(`^java\.lang\.(reflect\.(Method\.invoke|Constructor\.newInstance|Field\.get)|Class\.(forName|getMethod|getDeclaredMethod|getMethods|getDeclaredMethods|getField|getDeclaredField|newInstance))`),
		not:        regexp.MustCompile(`^java\.io\.Object(Output|Input)Stream\.`),
		suggestion: "look up methods, fields and classes once, outside the per-record code (or use a MethodHandle); better, call the code directly"},
	{id: "boxing", title: "boxing of primitive values", view: viewAlloc,
		frames: regexp.MustCompile(`^(java\.lang\.(Integer|Long|Double|Float|Short|Byte|Character|Boolean)\.valueOf|scala\.runtime\.BoxesRunTime\.(boxTo|unboxTo))`),
		// Spark's own record plumbing boxes what it moves (coalesce numbers
		// each record; PySpark pickles each value, with Pyrolite): no change
		// to the app's code removes that. Boxing in the code that evaluates
		// the app's functions (UDFs, typed Dataset operations, the code
		// Spark generates for a query) counts.
		notBy:      regexp.MustCompile(`^(org\.apache\.spark\.(rdd|api|util|shuffle|storage|scheduler|executor|serializer|sql\.execution\.python)\.|net\.razorvine\.)`),
		suggestion: "a UDF or collection of boxed numbers allocates an object per value: use primitive arrays or Spark's built-in functions (typed UDFs on Datasets box every value)"},
	{id: "compression", title: "compression and decompression", view: viewCPU,
		frames:     regexp.MustCompile(`^(org\.xerial\.snappy\.|com\.github\.luben\.zstd\.|net\.jpountz\.lz4\.|io\.airlift\.compress\.|java\.util\.zip\.(Deflater|Inflater|GZIP|CRC32)|org\.apache\.hadoop\.io\.compress\.|com\.ning\.compress\.|org\.apache\.commons\.compress\.)`),
		suggestion: "a cheaper codec: lz4 or zstd at a low level for shuffle (spark.io.compression.codec) and snappy or zstd for Parquet; gzip input is slow to read and cannot be split"},
	{id: "python-wait", title: "waiting for PySpark's Python workers", view: viewWall,
		frames:     regexp.MustCompile(`^org\.apache\.spark\.(api|sql\.execution)\.python\.`),
		leaf:       regexp.MustCompile(socketReads),
		suggestion: "the JVM waited for Python code: use Spark's built-in functions or pandas UDFs over Arrow (spark.sql.execution.arrow.pyspark.enabled) instead of row-at-a-time Python UDFs, and profile the Python side (spark.python.profile)"},
	{id: "lock-contention", title: "lock contention", view: viewLock,
		frames:     regexp.MustCompile(`.`),
		not:        regexp.MustCompile(`(ThreadPoolExecutor\.getTask|ForkJoinPool\.awaitWork|LinkedBlockingQueue\.(take|poll)|SynchronousQueue\.|DelayedWorkQueue\.take|ArrayBlockingQueue\.(take|poll)|LinkedBlockingDeque\.(take|poll)|Thread\.sleep|ThreadUtils\$\.awaitResult|scala\.concurrent\.Await|FutureTask\.get|CompletableFuture\.(get|join))`),
		suggestion: "tasks wait for each other on a shared object: give each task its own (a per-partition instance in mapPartitions), or use concurrent structures instead of synchronized ones"},
	{id: "list-append", title: "appending to an immutable Scala List", view: viewCPU,
		frames:     regexp.MustCompile(`^scala\.collection\.(SeqLike\$class\.\$colon\$plus|immutable\.List\.\$colon\$plus|SeqOps\.appended|StrictOptimizedSeqOps\.appended|immutable\.List\.appended)$`),
		suggestion: "List :+ copies the whole list: appending a partition's records one by one is quadratic; use a ListBuffer or ArrayBuffer, or prepend and reverse once"},
	{id: "json-parsing", title: "JSON parsed inside tasks", view: viewCPU,
		frames:     regexp.MustCompile(`^(com\.fasterxml\.jackson\.|org\.json4s\.|com\.google\.gson\.|org\.json\.|jakarta\.json\.|javax\.json\.|net\.minidev\.json\.)`),
		suggestion: "parse JSON once: store data read often as Parquet or ORC instead of JSON; in a UDF use from_json with an explicit schema, and create a parser (an ObjectMapper) once per partition in mapPartitions, not per record"},
	{id: "date-format", title: "date parsing and formatting with java.text", view: viewCPU,
		frames:     regexp.MustCompile(`^(java\.text\.(SimpleDateFormat|DateFormat)\.(parse|format|<init>)|java\.time\.format\.DateTimeFormatter\.ofPattern)`),
		suggestion: "use Spark's date functions (to_date, to_timestamp, date_format) instead of a UDF; or create one java.time DateTimeFormatter (thread-safe) instead of a SimpleDateFormat per record"},
}
