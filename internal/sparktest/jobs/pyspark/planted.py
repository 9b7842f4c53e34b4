"""The PySpark jobs of the real-Spark tests: a warm-up, then a job whose
one planted cause is a slow row-at-a-time Python UDF, slow_parse, in the
stage that evaluates it (job description planted:python-udf), a job
whose pandas UDF, slow_score, runs slow_hash on every value of its
batches (planted:pandas-udf), a job of
the RDD API whose records are big Python objects that cross between the
JVM and Python through a shuffle, pickled one by one
(planted:python-serialization), a job whose UDF closes over a big lookup
table, which each task unpickles before its first row
(planted:python-startup), and a job with no Python at all. Prints
JOBS DONE python APP_ID. UDF_ROWS sets the rows of the UDF's job (200,000;
the overhead benchmark's longer runs)."""

import os

import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql.functions import col, pandas_udf, udf
from pyspark.sql.types import LongType


def slow_parse(s):
    """The planted cause: pure-Python work on every row."""
    h = 0
    for c in s * 40:
        h = (h * 31 + ord(c)) & 0xFFFF
    return h


def slow_hash(s):
    """The pandas job's planted cause: pure-Python work on every value."""
    h = 0
    for c in s * 40:
        h = (h * 17 + ord(c)) & 0xFFFF
    return h


@pandas_udf(LongType())
def slow_score(s: pd.Series) -> pd.Series:
    """A pandas UDF that still runs Python on each value of its batch."""
    return s.map(slow_hash)


def record(i):
    """A record of the pickling job: cheap to make, costly to pickle."""
    return {"id": i, "tags": ["t%d" % (i % 7)] * 40, "score": i / 3.0}


def lookup(table):
    """The python-startup job's UDF: cheap on each row, but it closes over
    table, which every task unpickles with it."""

    def score(k):
        return table.get(k, 0)

    return score


def main():
    spark = SparkSession.builder.appName("sparkprof-pyspark").getOrCreate()
    sc = spark.sparkContext
    sc.setJobDescription("warm-up")
    spark.range(0, 1000, 1, 8).selectExpr("id % 10 AS k").groupBy("k").count().collect()
    sc.setJobDescription("planted:python-udf")
    parse = udf(slow_parse, LongType())
    n = int(os.environ.get("UDF_ROWS", "200000"))
    rows = spark.range(0, n, 1, 4).selectExpr("concat('2026-12-', id % 28 + 1, 'T', id) AS d")
    rows.select(parse(col("d")).alias("t")).groupBy().sum("t").collect()
    sc.setJobDescription("planted:pandas-udf")
    rows = spark.range(0, 150_000, 1, 4).selectExpr("concat('2026-12-', id % 28 + 1, 'T', id) AS d")
    rows.select(slow_score(col("d")).alias("t")).groupBy().sum("t").collect()
    sc.setJobDescription("planted:python-serialization")
    sc.parallelize(range(0, 1_200_000), 4).map(record).repartition(4).count()
    sc.setJobDescription("planted:python-startup")
    score = udf(lookup({"k%d" % i: i for i in range(500_000)}), LongType())
    keys = spark.range(0, 16_000, 1, 16).selectExpr("concat('k', id * 31) AS k")
    keys.select(score(col("k")).alias("v")).groupBy().sum("v").collect()
    sc.setJobDescription("planted:none")
    spark.range(0, 200_000, 1, 4).selectExpr("id % 10 AS k").groupBy("k").count().collect()
    print("JOBS DONE python " + sc.applicationId, flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
