// Package attribution ties profile samples to the Spark executor, stage and
// task they were taken in. It owns every rule that does:
//
//   - a thread's name (ClassifyThread, LabelThreads): Spark names its task
//     threads after the task they run, and its other threads by pool;
//   - the agent's task runs (ApplyTaskRuns): the executor plugin records
//     which thread ran which task when, for threads whose names do not say;
//   - the executor's task runs at a Python worker's sample's time
//     (ApplyWorkerRuns): a PySpark worker serves one task at a time, but
//     nothing in its samples says which;
//   - the task windows of the app's model (NewJoiner, InTaskWindow): a
//     sample carries a task's labels only while the task ran, since before
//     Spark 4.2 a thread keeps a finished task's name until its next task.
//
// TaskSamples combines them into the one rule for "the samples of task T"
// that the CLI and the server share.
package attribution
