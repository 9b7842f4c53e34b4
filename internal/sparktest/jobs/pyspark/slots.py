"""The PySpark job of the real-Spark test of an executor with two task
slots: one stage of four tasks, partition k running part_k for k + 1
units of wall time, so that two tasks run at once in two Python workers
of one executor and end at different times. Prints JOBS DONE slots
APP_ID."""

import time

from pyspark.sql import SparkSession

UNIT = 1.0  # seconds: the longest task is shorter than the test's windows


def spin(seconds):
    """Busy Python for seconds of wall time."""
    end, n = time.perf_counter() + seconds, 0
    while time.perf_counter() < end:
        n += 1
    return n


def part_0():
    return spin(1 * UNIT)


def part_1():
    return spin(2 * UNIT)


def part_2():
    return spin(3 * UNIT)


def part_3():
    return spin(4 * UNIT)


PARTS = [part_0, part_1, part_2, part_3]


def run(index, rows):
    yield PARTS[index]()


def main():
    spark = SparkSession.builder.appName("sparkprof-pyspark-slots").getOrCreate()
    sc = spark.sparkContext
    sc.setJobDescription("slots")
    sc.parallelize(range(4), 4).mapPartitionsWithIndex(run).collect()
    print("JOBS DONE slots " + sc.applicationId, flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
