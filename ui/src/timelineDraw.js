// Painting of the application timeline laid out by timelineLayout.js on a
// canvas, along the time axis of timeScale.js. Each painter records what
// it drew where, so that the pointer finds exactly what is under it.
import { ROW } from './timelineLayout';
import { ticks } from './timeScale';
import { findingStages } from './api';
import { fmtMs } from './format';
import { phases } from './tasks';

// GUTTER is the width of the row labels left of the time axis, and RIGHT
// the margin right of it; the metric charts under the timeline keep the
// same, so that their times line up.
export const GUTTER = 130;
export const RIGHT = 10;

// colors of the timeline, shared with its legend.
export const colors = {
  job: '#6c8ebf',
  stage: '#82b366',
  active: '#f0ad4e',
  pending: '#ccc',
  failed: '#d9534f',
  killed: '#bab0ac',
  straggler: '#8b0000',
  other: '#c9d6e3',
  finding: '#e67e22',
  band: '#f7f7f7',
  dead: '#e4e4e4',
  added: '#2e7d32',
  removed: '#c62828',
  unknown: '#9aa5b1',
};

// phaseColors colour a task's phases (tasks.phases), as the History
// Server's event timeline does.
export const phaseColors = {
  schedulerDelayMs: '#80b1d3',
  deserializeMs: '#fb8072',
  shuffleReadMs: '#fdb462',
  computeMs: '#8fc95a',
  shuffleWriteMs: '#f2d94e',
  serializeMs: '#bc80bd',
  gettingResultMs: '#4fb3a5',
};

// drawAxis draws the time axis with its ticks down the chart, and the
// compressed stretches as hatched bands, labelled with how long they are.
function drawAxis(g, L, sc, hits) {
  g.strokeStyle = '#eee';
  g.fillStyle = '#555';
  g.textAlign = 'center';
  for (const tk of ticks(sc)) {
    g.beginPath();
    g.moveTo(tk.x, 16);
    g.lineTo(tk.x, L.height);
    g.stroke();
    g.fillText(tk.label, Math.min(Math.max(tk.x, sc.left + 20), sc.left + sc.width - 20), 11);
  }
  for (const s of sc.segments) {
    if (!s.compressed) continue;
    g.fillStyle = 'rgba(200, 200, 200, 0.35)';
    g.fillRect(s.x0, 14, s.x1 - s.x0, L.height - 14);
    g.strokeStyle = '#d6d6d6';
    g.beginPath();
    for (let y = 14; y < L.height; y += 8) {
      g.moveTo(s.x0, y + 8);
      g.lineTo(s.x1, y + 8 - (s.x1 - s.x0) / 4);
    }
    g.stroke();
    g.fillStyle = '#444';
    const mid = (s.x0 + s.x1) / 2;
    g.fillText(fmtMs(s.t1 - s.t0), mid, 11);
    g.fillText('no tasks', mid, 24);
    hits.push({ kind: 'gap', s, x: s.x0, y: 0, w: s.x1 - s.x0, h: L.height });
  }
  g.textAlign = 'left';
}

// drawLanes draws each executor's band, shaded where it did not run
// (before it was added, after it was removed).
function drawLanes(g, L, sc) {
  const right = sc.left + sc.width;
  for (const r of L.execRows) {
    g.fillStyle = colors.band;
    g.fillRect(sc.left, r.y, sc.width, r.h);
    const from = r.addedMs && r.addedMs > sc.t0 ? Math.min(sc.x(r.addedMs), right) : sc.left;
    const to = r.removedMs && r.removedMs < sc.t1 ? Math.max(sc.x(r.removedMs), sc.left) : right;
    g.fillStyle = colors.dead;
    if (from > sc.left) g.fillRect(sc.left, r.y, from - sc.left, r.h);
    if (to < right) g.fillRect(to, r.y, right - to, r.h);
  }
}

// drawMarks draws each executor's added and removed marks, and the row
// labels.
function drawMarks(g, L, sc, hits) {
  for (const r of L.execRows) {
    const mark = (t, color, kind) => {
      if (!t || t < sc.t0 || t > sc.t1) return;
      const x = sc.x(t);
      g.fillStyle = color;
      g.beginPath();
      g.moveTo(x - 4, r.y);
      g.lineTo(x + 4, r.y);
      g.lineTo(x, r.y + 6);
      g.fill();
      g.fillRect(x - 0.5, r.y, 1, r.h);
      hits.push({ kind, r, x: x - 4, y: r.y, w: 8, h: r.h });
    };
    mark(r.addedMs, colors.added, 'added');
    mark(r.removedMs, colors.removed, 'removed');
  }
  for (const r of [L.jobsRow, L.stagesRow, ...L.execRows]) {
    g.fillStyle = r.kind === 'exec' && r.tasks.length === 0 ? '#999' : '#333';
    g.fillText(r.label, 4, r.y + Math.min(r.h, ROW) - 3);
  }
}

// span returns the pixels of [a, b] on sc, clipped to the plot, or null
// when it is out of view.
function span(sc, a, b) {
  if (b < sc.t0 || a > sc.t1) return null;
  const x0 = sc.x(Math.max(a, sc.t0));
  return [x0, Math.max(1, sc.x(Math.min(b, sc.t1)) - x0)];
}

function drawJobs(g, L, sc, hits) {
  for (const j of L.jobs.lanes.keys()) {
    const p = span(sc, L.jobStart(j), L.jobEnd(j));
    if (!p) continue;
    const y = L.jobsRow.y + L.jobs.lanes.get(j) * ROW;
    g.fillStyle = j.result === 'JobFailed' ? colors.failed : j.result ? colors.job : colors.active;
    g.fillRect(p[0], y + 1, p[1], ROW - 2);
    // A job's start marked down the whole chart.
    if (L.jobStart(j) >= sc.t0) {
      g.fillStyle = 'rgba(0, 0, 0, 0.15)';
      g.fillRect(p[0], y + ROW, 1, L.height - y - ROW);
    }
    hits.push({ kind: 'job', j, x: p[0], y, w: p[1], h: ROW });
  }
}

function drawStages(g, L, sc, findings, selectedStage, hits) {
  const withFinding = new Set((findings || []).flatMap(findingStages));
  for (const s of L.ran) {
    const p = span(sc, L.stageStart(s), L.stageEnd(s));
    if (!p) continue;
    const [x0, w] = [p[0], Math.max(2, p[1])];
    const y = L.stagesRow.y + L.stages.lanes.get(s) * ROW;
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

// taskFill is a task's colour when it is not drawn by phase: stragglers
// stand out, then its state, then phases unknown (no task metrics); with
// a stage selected, the other stages' tasks fade. null means by phase.
function taskFill(tk, stragglers, selectedStage) {
  if (selectedStage !== null && selectedStage !== undefined && tk.stageId !== selectedStage) return colors.other;
  if (stragglers.has(tk.taskId)) return colors.straggler;
  if (!tk.finishMs) return colors.active;
  if (tk.status === 'KILLED') return colors.killed;
  if (tk.status && tk.status !== 'SUCCESS') return colors.failed;
  if (tk.noMetrics) return colors.unknown;
  return null;
}

// phaseOrder are the phases' fields, in drawing order.
const phaseOrder = phases.map(([k]) => k);

// longestPhase returns the index in phaseOrder of a task's longest phase.
function longestPhase(tk) {
  let best = phaseOrder.indexOf('computeMs');
  for (let k = 0; k < phaseOrder.length; k++) if ((tk[phaseOrder[k]] || 0) > (tk[phaseOrder[best]] || 0)) best = k;
  return best;
}

// drawPhases fills a finished task's bar with its phases, side by side in
// proportion; a bar too narrow for that takes its longest phase's colour.
function drawPhases(g, tk, x0, y, w, h) {
  if (w < 6) {
    g.fillStyle = phaseColors[phaseOrder[longestPhase(tk)]];
    g.fillRect(x0, y, w, h);
    return;
  }
  const d = Math.max(1, tk.finishMs - tk.launchMs);
  let x = x0;
  for (const k of phaseOrder) {
    const pw = (w * (tk[k] || 0)) / d;
    if (pw <= 0) continue;
    g.fillStyle = phaseColors[k];
    g.fillRect(x, y, pw, h);
    x += pw;
  }
}

// barLook is a number that two bars of one width share when they look the
// same: their colour, or their phases' widths in whole pixels.
function barLook(tk, fill, w) {
  if (fill) return fill;
  if (w < 6) return longestPhase(tk);
  const d = Math.max(1, tk.finishMs - tk.launchMs);
  let look = 7;
  for (const k of phaseOrder) look = (look * 31 + Math.round((w * (tk[k] || 0)) / d)) | 0;
  return look;
}

// drawTasks draws every task in its executor's lanes. A task that would
// look just as one drawn already at the same place in its lane (past the
// lanes an executor gets, tasks share lanes; an app that ran the same
// partitions again and again has thousands of bars at one place) is
// counted but not drawn again, nor given a hit area of its own.
function drawTasks(g, L, sc, stragglers, selectedStage, hits) {
  let marked = 0;
  let drawn = 0;
  for (const r of L.execRows) {
    hits.push({ kind: 'exec', r, x: sc.left, y: r.y, w: sc.width, h: r.h });
    const seen = new Map(); // lane, x and width → the looks drawn there
    for (const tk of r.tasks) {
      const p = span(sc, tk.launchMs, tk.finishMs || L.t1);
      if (!p) continue;
      drawn++;
      const fill = taskFill(tk, stragglers, selectedStage);
      if (fill === colors.straggler) marked++;
      const lane = r.lanes.get(tk);
      const at = (lane * 8192 + Math.round(p[0])) * 8192 + Math.min(8191, Math.round(p[1]));
      const look = barLook(tk, fill, p[1]);
      let looks = seen.get(at);
      if (!looks) seen.set(at, (looks = new Set()));
      if (looks.has(look)) continue;
      looks.add(look);
      const y = r.y + 2 + lane * r.laneH;
      if (fill) {
        g.fillStyle = fill;
        g.fillRect(p[0], y, p[1], r.laneH - 1);
      } else {
        drawPhases(g, tk, p[0], y, p[1], r.laneH - 1);
      }
      hits.push({ kind: 'task', t: tk, x: p[0], y, w: Math.max(2, p[1]), h: r.laneH });
    }
  }
  return { marked, drawn };
}

// draw paints L on g along the time axis sc, with a dragged range shaded,
// and returns what it drew: the hit areas, topmost last, and counts of
// what it drew for a reader of the page.
export function draw(g, L, sc, width, { findings, stragglers, selectedStage, shade }) {
  const hits = [];
  g.clearRect(0, 0, width, L.height);
  g.font = '11px system-ui, sans-serif';
  drawLanes(g, L, sc);
  drawAxis(g, L, sc, hits);
  drawMarks(g, L, sc, hits);
  drawJobs(g, L, sc, hits);
  drawStages(g, L, sc, findings, selectedStage, hits);
  const tasks = drawTasks(g, L, sc, stragglers, selectedStage, hits);
  if (shade) {
    g.fillStyle = 'rgba(30, 90, 200, 0.15)';
    g.fillRect(Math.min(shade[0], shade[1]), 14, Math.abs(shade[1] - shade[0]), L.height - 14);
  }
  const count = (kind) => hits.filter((h) => h.kind === kind).length;
  return {
    hits,
    drawn: {
      jobs: count('job'),
      stages: count('stage'),
      tasks: tasks.drawn,
      stragglers: tasks.marked,
      executors: L.execRows.length,
      idleExecutors: L.execRows.filter((r) => r.tasks.length === 0).length,
      removed: count('removed'),
      gaps: count('gap'),
      // The height of the task lanes of each executor, in its order.
      laneHeights: L.execRows.map((r) => r.laneH).join(','),
    },
  };
}
