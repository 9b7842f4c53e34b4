import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Parses a JSON document per record with Jackson, as a UDF that reads a JSON column would, in a thread named as
 * Spark names its task threads, until it has used the CPU time asked for (Patterns.run). Needs Patterns.java and
 * Jackson (databind, core, annotations) on the class path:
 *
 * <pre>java -cp .:jackson-databind.jar:jackson-core.jar:jackson-annotations.jar JsonPatterns 1000</pre>
 */
public final class JsonPatterns {
  public static void main(String[] args) throws Exception {
    long cpuMillis = Long.parseLong(args[0]);
    Patterns.Work w = i -> {
      // A mapper per record, as code that does not know better writes it.
      ObjectMapper mapper = new ObjectMapper();
      JsonNode n = mapper.readTree("{\"id\":" + i + ",\"name\":\"row-" + i + "\",\"tags\":[\"a\",\"b\",\"c\"],\"value\":" + (i * 0.5) + "}");
      return n.get("id").asLong() + n.get("tags").size();
    };
    Thread th = new Thread(() -> Patterns.run(w, cpuMillis), "Executor task launch worker for task 0");
    th.start();
    th.join();
    System.out.println("json " + Patterns.sink);
  }
}
