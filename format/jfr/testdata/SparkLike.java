import java.util.concurrent.locks.LockSupport;

// SparkLike runs threads named like Spark 3.1+ executor task threads that
// burn CPU, allocate, contend on a monitor and park, for format/jfr's test
// of a real JDK recording.
public class SparkLike {
    static final Object LOCK = new Object();
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        long until = System.nanoTime() + Long.parseLong(args[0]) * 1_000_000L;
        Thread[] ts = new Thread[4];
        for (int i = 0; i < ts.length; i++) {
            final int id = i;
            ts[i] = new Thread(() -> work(until, id),
                "Executor task launch worker for task " + id + ".0 in stage 2.0 (TID " + (17 + id) + ")");
            ts[i].start();
        }
        for (Thread t : ts) {
            t.join();
        }
        // With -XX:+ExplicitGCInvokesConcurrent, a concurrent cycle: a
        // collection that lasts longer than it pauses.
        System.gc();
    }

    static void work(long until, int id) {
        while (System.nanoTime() < until) {
            long x = 0;
            for (int i = 0; i < 200_000; i++) {
                x += (long) i * i % 7;
            }
            byte[][] junk = new byte[64][];
            for (int i = 0; i < junk.length; i++) {
                junk[i] = new byte[16 << 10];
            }
            sink += x + junk[id].length;
            synchronized (LOCK) {
                LockSupport.parkNanos(2_000_000L);
            }
            LockSupport.parkNanos(25_000_000L);
        }
    }
}
