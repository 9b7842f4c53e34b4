// The timeline form of an application's report (report.NewPageData): the
// offline report embeds it, and the server answers it for the app page
// (/api/v1/apps/{id}?tasks=timeline).

// statuses are the task states the compact task encoding numbers
// (report.taskStates).
const statuses = ['SUCCESS', 'FAILED', 'KILLED', 'RUNNING'];

// phases are a task's phases in the order the History Server's event
// timeline draws them, each with the field decode gives it; computing
// is the rest of the task's time.
export const phases = [
  ['schedulerDelayMs', 'scheduler delay'],
  ['deserializeMs', 'task deserialisation'],
  ['shuffleReadMs', 'shuffle read'],
  ['computeMs', 'computing'],
  ['shuffleWriteMs', 'shuffle write'],
  ['serializeMs', 'result serialisation'],
  ['gettingResultMs', 'getting result'],
];

// decode turns the data (the analysis report's JSON, where an empty list
// may be null) into the report the components draw. Its tasks are
// compact: [id, stage, partition, lane, launch, finish, status, scheduler
// delay, deserialisation, shuffle read, shuffle write, serialisation,
// getting result], with lane an index into lanes (executor ids), times in
// ms from origin (finish -1 while running) and status an index into
// statuses; a scheduler delay of -1 says the task has no metrics (from a
// container log): its phases are unknown (noMetrics), not all delay.
export function decode(d) {
  const lists = {};
  for (const k of ['executors', 'jobs', 'stages', 'sql', 'findings', 'metrics']) lists[k] = d[k] || [];
  const tasks = d.tasks.map((c) => {
    const finishMs = c[5] < 0 ? 0 : d.origin + c[5];
    const launchMs = d.origin + c[4];
    const t = {
      taskId: c[0],
      stageId: c[1],
      partition: c[2],
      executorId: d.lanes[c[3]],
      launchMs,
      finishMs,
      status: statuses[c[6]],
      noMetrics: c[7] < 0,
      schedulerDelayMs: Math.max(0, c[7] || 0),
      deserializeMs: c[8] || 0,
      shuffleReadMs: c[9] || 0,
      shuffleWriteMs: c[10] || 0,
      serializeMs: c[11] || 0,
      gettingResultMs: c[12] || 0,
    };
    const known = t.schedulerDelayMs + t.deserializeMs + t.shuffleReadMs + t.shuffleWriteMs + t.serializeMs + t.gettingResultMs;
    t.computeMs = finishMs && !t.noMetrics ? Math.max(0, finishMs - launchMs - known) : 0;
    return t;
  });
  return { ...d, ...lists, tasks };
}
