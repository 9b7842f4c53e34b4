"""A short PySpark job whose Python profiles the pstats tests read.

Usage: python spark_job.py OUT_DIR  (with pyspark importable)
Writes OUT_DIR/sc/ with sc.dump_profiles (spark.python.profile=true: an
rdd_<id>.pstats per profiled RDD, a udf_<id>.pstats per UDF) and, on
Spark 4, OUT_DIR/udf/ with spark.profile.dump
(spark.sql.pyspark.udf.profiler=perf: udf_<id>_perf.pstats) from a
second session without spark.python.profile: with both on, Python's one
profile hook goes to the RDD profiler's cProfile, and the UDF profiler's
file holds only that profiler's own frames.
"""
import os
import sys

import pyspark
from pyspark.sql import SparkSession
from pyspark.sql.functions import udf

out = sys.argv[1]
spark4 = int(pyspark.__version__.split(".")[0]) >= 4


def session(**conf):
    builder = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
    for k, v in conf.items():
        builder = builder.config(k, v)
    return builder.getOrCreate()


def slow_square(x):
    s = 0
    for i in range(300):
        s += i
    return x * x


def parse_record(x):
    return sum(int(c) for c in str(x))


spark = session(**{"spark.python.profile": "true"})
sc = spark.sparkContext
sc.parallelize(range(20000), 2).map(parse_record).sum()
spark.range(3000).select(udf(slow_square, "long")("id")).collect()
sc.dump_profiles(os.path.join(out, "sc"))
spark.stop()
if spark4:
    # SparkSession.builder keeps the options of earlier sessions.
    spark = session(**{"spark.python.profile": "false", "spark.sql.pyspark.udf.profiler": "perf"})
    spark.range(3000).select(udf(slow_square, "long")("id")).collect()
    spark.profile.dump(os.path.join(out, "udf"))
    spark.stop()
print("spark_job: done")
