// Painting of the application timeline laid out by timelineLayout.js on a
// canvas. Each painter records what it drew where, so that the pointer
// finds exactly what is under it.
import { ROW, TASK_ROW } from './timelineLayout';
import { findingStages } from './api';
import { fmtMs } from './format';

// GUTTER is the width of the row labels left of the time axis.
export const GUTTER = 130;

// colors of the timeline, shared with its legend.
export const colors = {
  job: '#6c8ebf',
  stage: '#82b366',
  active: '#f0ad4e',
  pending: '#ccc',
  failed: '#d9534f',
  killed: '#bab0ac',
  task: '#5b9bd5',
  straggler: '#8b0000',
  other: '#c9d6e3',
  finding: '#e67e22',
  overlay: 'rgba(89, 161, 79, 0.8)',
};

// scale maps times of L to x positions on a canvas width px wide, and back.
export function scale(L, width) {
  const span = Math.max(1, L.t1 - L.t0);
  const plot = width - GUTTER - 10;
  return { x: (t) => GUTTER + ((t - L.t0) / span) * plot, t: (px) => L.t0 + ((px - GUTTER) / plot) * span };
}

// drawGrid draws the executor bands, the time axis with its ticks down
// the chart, and the row labels.
function drawGrid(g, L, width, x) {
  g.fillStyle = '#f7f7f7';
  for (const r of L.execRows) g.fillRect(GUTTER, r.y, width - GUTTER - 10, r.h);
  g.fillStyle = '#555';
  g.strokeStyle = '#eee';
  const ticks = 8;
  for (let i = 0; i <= ticks; i++) {
    const t = L.t0 + ((L.t1 - L.t0) * i) / ticks;
    const px = x(t);
    g.beginPath();
    g.moveTo(px, 14);
    g.lineTo(px, L.height);
    g.stroke();
    // The last label ends at its tick, so the canvas edge does not cut it.
    g.textAlign = i === ticks ? 'right' : 'left';
    g.fillText(fmtMs(Math.round(t - L.t0)), i === ticks ? px - 2 : px + 2, 11);
  }
  g.textAlign = 'left';
  for (const r of [L.jobsRow, L.stagesRow, ...L.metricRows, ...L.execRows]) {
    g.fillStyle = '#333';
    g.fillText(r.label, 4, r.y + Math.min(r.h, ROW) - 3);
  }
}

function drawJobs(g, L, x, hits) {
  for (const j of L.jobs.lanes.keys()) {
    const y = L.jobsRow.y + L.jobs.lanes.get(j) * ROW;
    const x0 = x(L.jobStart(j));
    const w = Math.max(1, x(L.jobEnd(j)) - x0);
    g.fillStyle = j.result === 'JobFailed' ? colors.failed : j.result ? colors.job : colors.active;
    g.fillRect(x0, y + 1, w, ROW - 2);
    // A job's start marked down the whole chart.
    g.fillStyle = 'rgba(0, 0, 0, 0.15)';
    g.fillRect(x0, y + ROW, 1, L.height - y - ROW);
    hits.push({ kind: 'job', j, x: x0, y, w, h: ROW });
  }
}

function drawStages(g, L, x, findings, selectedStage, hits) {
  const withFinding = new Set((findings || []).flatMap(findingStages));
  for (const s of L.ran) {
    const y = L.stagesRow.y + L.stages.lanes.get(s) * ROW;
    const x0 = x(L.stageStart(s));
    const w = Math.max(2, x(L.stageEnd(s)) - x0);
    g.fillStyle = s.status === 'FAILED' ? colors.failed : s.status === 'COMPLETE' ? colors.stage : s.status === 'PENDING' ? colors.pending : colors.active;
    g.fillRect(x0, y + 1, w, ROW - 2);
    if (withFinding.has(s.stageId)) {
      g.strokeStyle = colors.finding;
      g.lineWidth = 2;
      g.strokeRect(x0, y + 1, w, ROW - 2);
      g.lineWidth = 1;
    }
    if (selectedStage === s.stageId) {
      g.strokeStyle = '#000';
      g.lineWidth = 2;
      g.strokeRect(x0 - 1, y, w + 2, ROW);
      g.lineWidth = 1;
    }
    if (w > 30) {
      g.fillStyle = '#fff';
      g.fillText(`${s.stageId}`, x0 + 3, y + ROW - 3);
    }
    hits.push({ kind: 'stage', s, x: x0, y, w, h: ROW });
  }
}

// taskColor is a task's fill: stragglers stand out, then its state; with
// a stage selected, the other stages' tasks fade.
function taskColor(tk, stragglers, selectedStage) {
  if (selectedStage !== null && selectedStage !== undefined && tk.stageId !== selectedStage) return colors.other;
  if (stragglers.has(tk.taskId)) return colors.straggler;
  if (!tk.finishMs) return colors.active;
  if (tk.status === 'KILLED') return colors.killed;
  if (tk.status && tk.status !== 'SUCCESS') return colors.failed;
  return colors.task;
}

function drawTasks(g, L, width, x, stragglers, selectedStage, hits) {
  let marked = 0;
  for (const r of L.execRows) {
    hits.push({ kind: 'exec', r, x: GUTTER, y: r.y, w: width - GUTTER - 10, h: r.h });
    for (const tk of r.tasks) {
      const y = r.y + 2 + r.lanes.get(tk) * TASK_ROW;
      const x0 = x(tk.launchMs);
      const w = Math.max(1, x(tk.finishMs || L.t1) - x0);
      const color = taskColor(tk, stragglers, selectedStage);
      g.fillStyle = color;
      g.fillRect(x0, y, w, TASK_ROW - 1);
      if (color === colors.straggler) marked++;
      hits.push({ kind: 'task', t: tk, x: x0, y, w: Math.max(2, w), h: TASK_ROW });
    }
  }
  return marked;
}

// drawSeries draws a metric series as a line over a row, scaled to the
// series' own maximum.
function drawSeries(g, m, row, x) {
  const hi = m.points.reduce((a, p) => Math.max(a, p[1]), 0);
  if (hi <= 0) return;
  g.strokeStyle = colors.overlay;
  g.beginPath();
  m.points.forEach((p, i) => {
    const px = x(p[0]);
    const py = row.y + row.h - (row.h * p[1]) / hi;
    if (i) g.lineTo(px, py);
    else g.moveTo(px, py);
  });
  g.stroke();
}

function drawMetrics(g, L, width, x, hits) {
  let overlays = 0;
  for (const r of L.execRows) {
    for (const m of r.series) drawSeries(g, m, r, x);
    overlays += r.series.length;
  }
  for (const r of L.metricRows) {
    drawSeries(g, r.series[0], r, x);
    hits.push({ kind: 'metric', m: r.series[0], x: GUTTER, y: r.y, w: width - GUTTER - 10, h: r.h });
  }
  return overlays;
}

// draw paints L on g, width CSS pixels wide, with a time window (or a
// dragged range) shaded, and returns what it drew: the hit areas, topmost
// last, and counts of what it marked for a reader of the page.
export function draw(g, L, width, { findings, stragglers, selectedStage, shade }) {
  const { x } = scale(L, width);
  const hits = [];
  g.clearRect(0, 0, width, L.height);
  g.font = '11px system-ui, sans-serif';
  drawGrid(g, L, width, x);
  drawJobs(g, L, x, hits);
  drawStages(g, L, x, findings, selectedStage, hits);
  const stragglersMarked = drawTasks(g, L, width, x, stragglers, selectedStage, hits);
  const overlays = drawMetrics(g, L, width, x, hits);
  if (shade) {
    g.fillStyle = 'rgba(30, 90, 200, 0.15)';
    g.fillRect(Math.min(shade[0], shade[1]), 14, Math.abs(shade[1] - shade[0]), L.height - 14);
  }
  const count = (kind) => hits.filter((h) => h.kind === kind).length;
  return {
    hits,
    drawn: { jobs: count('job'), stages: count('stage'), tasks: count('task'), stragglers: stragglersMarked, metricRows: L.metricRows.length, overlays },
  };
}
