// The rows of the application timeline: where each job, stage, task and
// metric series goes, before any pixel is drawn (see Timeline.jsx).
import { minOf, maxOf } from './api';

// Row heights and bounds, in CSS pixels.
export const ROW = 14;
export const TASK_ROW = 5;
const MAX_JOB_LANES = 6;
const MAX_STAGE_LANES = 12;
const MAX_TASK_LANES = 24;
// Series of no executor lane get a row each, this tall, at most this many.
const METRIC_ROW = 3 * ROW;
const MAX_METRIC_ROWS = 8;

// timeSpan returns the first and last instant of an application's report
// (ms since the epoch): its start, or its first task launch when earlier
// or the start is unknown, to its end, or its last task, stage or job end.
export function timeSpan(rep) {
  const app = rep.app;
  let t0 = minOf(rep.tasks, (t) => t.launchMs || Infinity, app.startMs || Infinity);
  if (t0 === Infinity) t0 = minOf(rep.stages, (s) => s.submitMs || Infinity);
  if (t0 === Infinity) t0 = 0;
  let t1 = maxOf(rep.tasks, (t) => t.finishMs || t.launchMs, app.endMs || 0);
  t1 = maxOf(rep.stages, (s) => s.completeMs || 0, t1);
  t1 = maxOf(rep.jobs, (j) => j.endMs || 0, t1);
  return [t0, Math.max(t1, t0 + 1)];
}

// pack assigns each item [start, end] the first lane free at its start;
// past maxLanes, the lane that frees first.
function pack(items, start, end, maxLanes) {
  const laneEnd = [];
  const lanes = new Map();
  const sorted = [...items].sort((a, b) => start(a) - start(b));
  for (const it of sorted) {
    let l = laneEnd.findIndex((e) => e <= start(it));
    if (l < 0) {
      l = laneEnd.length < maxLanes ? laneEnd.length : laneEnd.indexOf(Math.min(...laneEnd));
    }
    laneEnd[l] = Math.max(laneEnd[l] || 0, end(it));
    lanes.set(it, l);
  }
  return { lanes, count: Math.max(1, laneEnd.length) };
}

// executorOrder sorts executor ids: the driver first, then by number.
function executorOrder(a, b) {
  if (a === b) return 0;
  if (a === 'driver') return -1;
  if (b === 'driver') return 1;
  return Number(a) - Number(b) || a.localeCompare(b);
}

// executorLanes groups the tasks by executor, one lane per executor the
// report lists or a task ran on, with the metric series of that executor.
function executorLanes(rep, t1) {
  const ids = new Set((rep.executors || []).map((e) => e.id));
  const byExec = new Map();
  for (const t of rep.tasks) {
    ids.add(t.executorId);
    if (!byExec.has(t.executorId)) byExec.set(t.executorId, []);
    byExec.get(t.executorId).push(t);
  }
  return [...ids].sort(executorOrder).map((id) => {
    const tasks = byExec.get(id) || [];
    const p = pack(tasks, (t) => t.launchMs, (t) => t.finishMs || t1, MAX_TASK_LANES);
    return { kind: 'exec', id, label: id === 'driver' ? 'driver' : `executor ${id}`, tasks, lanes: p.lanes, h: Math.max(ROW, p.count * TASK_ROW + 4), series: [] };
  });
}

// metricLabel shortens a series name to fit the label gutter.
function metricLabel(name) {
  return name.length > 21 ? `…${name.slice(-20)}` : name;
}

// layout computes the rows of the chart: jobs and stages (each packed
// into lanes), a row per metric series of no executor, and a band of task
// lanes per executor carrying that executor's series. Without overlays the
// series are left out.
export function layout(rep, overlays) {
  const [t0, t1] = timeSpan(rep);
  // A job whose start the log lacks (a JobEnd without its JobStart) is
  // drawn at its end, not from the epoch across the whole chart.
  const jobStart = (j) => j.submitMs || j.endMs || t0;
  const jobEnd = (j) => j.endMs || t1;
  const stageStart = (s) => s.submitMs || s.firstTaskLaunchMs || t0;
  const stageEnd = (s) => s.completeMs || t1;
  const jobs = pack(rep.jobs, jobStart, jobEnd, MAX_JOB_LANES);
  // Stages that never ran (skipped, pending) have no times to draw.
  const ran = rep.stages.filter((s) => s.submitMs || s.firstTaskLaunchMs);
  const stages = pack(ran, stageStart, stageEnd, MAX_STAGE_LANES);
  const execRows = executorLanes(rep, t1);
  const metricRows = [];
  if (overlays) {
    const lane = new Map(execRows.map((r) => [r.id, r]));
    for (const m of rep.metrics || []) {
      if (!m.points.length) continue;
      if (lane.has(m.executorId)) lane.get(m.executorId).series.push(m);
      else if (metricRows.length < MAX_METRIC_ROWS) metricRows.push({ kind: 'metric', label: metricLabel(m.name), h: METRIC_ROW, series: [m] });
    }
  }
  let y = 22;
  const place = (row, gap) => {
    row.y = y;
    y += row.h + gap;
    return row;
  };
  const jobsRow = place({ kind: 'jobs', label: 'Jobs', h: jobs.count * ROW }, 6);
  const stagesRow = place({ kind: 'stages', label: 'Stages', h: stages.count * ROW }, 10);
  metricRows.forEach((r) => place(r, 2));
  execRows.forEach((r) => place(r, 2));
  return { t0, t1, jobs, jobStart, jobEnd, stages, ran, stageStart, stageEnd, jobsRow, stagesRow, metricRows, execRows, height: y + 6 };
}
