package org.apache.spark;

/** Compile-only mirror of Spark's TaskFailedReason trait. */
public interface TaskFailedReason {
  String toErrorString();
}
