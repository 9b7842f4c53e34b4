// The rows of the application timeline: where each job, stage and task
// goes, before any pixel is drawn (see Timeline.jsx).
import { minOf, maxOf } from './api.js';

// Row heights and bounds, in CSS pixels.
export const ROW = 14;
// A task lane is TASK_ROW pixels high in a busy executor's band, up to
// MAX_TASK_ROW when it has few lanes (TASK_BAND pixels in all): three
// tasks are bars one can read and point at, not 4-pixel lines.
export const TASK_ROW = 5;
const MAX_TASK_ROW = 12;
const TASK_BAND = 40;
export const AXIS = 30;
const MAX_JOB_LANES = 6;
const MAX_STAGE_LANES = 12;
const MAX_TASK_LANES = 24;

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

// laneHeight is the height of each of an executor's count task lanes.
export function laneHeight(count) {
  return Math.min(MAX_TASK_ROW, Math.max(TASK_ROW, Math.floor(TASK_BAND / count)));
}

// executorLanes groups the tasks by executor: one band of lanes per
// executor the report lists (those that ran no task too) or a task ran
// on, with the executor's life (added, removed and why).
function executorLanes(rep, t1) {
  const info = new Map((rep.executors || []).map((e) => [e.id, e]));
  const byExec = new Map();
  for (const t of rep.tasks) {
    if (!byExec.has(t.executorId)) byExec.set(t.executorId, []);
    byExec.get(t.executorId).push(t);
  }
  const ids = new Set([...info.keys(), ...byExec.keys()]);
  return [...ids].sort(executorOrder).map((id) => {
    const tasks = byExec.get(id) || [];
    const p = pack(tasks, (t) => t.launchMs, (t) => t.finishMs || t1, MAX_TASK_LANES);
    const e = info.get(id) || {};
    const label = id === 'driver' ? 'driver' : `executor ${id}`;
    return {
      kind: 'exec',
      id,
      label: tasks.length ? label : `${label} (idle)`,
      tasks,
      lanes: p.lanes,
      laneH: laneHeight(p.count),
      h: Math.max(ROW, p.count * laneHeight(p.count) + 4),
      addedMs: e.addedMs || 0,
      removedMs: e.removedMs || 0,
      removalReason: e.removalReason || '',
      host: e.host || '',
    };
  });
}

// layout computes the rows of the chart: the time axis, jobs and stages
// (each packed into lanes), and a band of task lanes per executor.
export function layout(rep) {
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
  let y = AXIS;
  const place = (row, gap) => {
    row.y = y;
    y += row.h + gap;
    return row;
  };
  const jobsRow = place({ kind: 'jobs', label: 'Jobs', h: jobs.count * ROW }, 6);
  const stagesRow = place({ kind: 'stages', label: 'Stages', h: stages.count * ROW }, 10);
  execRows.forEach((r) => place(r, 2));
  return { t0, t1, jobs, jobStart, jobEnd, stages, ran, stageStart, stageEnd, jobsRow, stagesRow, execRows, height: y + 6 };
}
