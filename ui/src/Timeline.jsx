// The application timeline on a canvas: jobs and stages as a Gantt chart,
// then one band of task lanes per executor. Dragging brushes a time window;
// clicking a stage selects it.
import React, { useEffect, useMemo, useRef, useState } from 'react';
import { findingStages, minOf } from './api';
import { fmtMs } from './format';

const GUTTER = 130;
const ROW = 14;
const TASK_ROW = 5;
const MAX_LANES = 24;

// pack assigns each item [start, end] the first lane free at its start.
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

// layout computes the rows of the chart.
function layout(rep) {
  const app = rep.app;
  const t0 = app.startMs || minOf(rep.tasks, (t) => t.launchMs, minOf(rep.stages, (s) => s.submitMs || Infinity));
  let t1 = app.endMs || 0;
  for (const t of rep.tasks) t1 = Math.max(t1, t.finishMs || t.launchMs);
  for (const s of rep.stages) t1 = Math.max(t1, s.completeMs || 0);
  const stageEnd = (s) => s.completeMs || t1;
  const stageStart = (s) => s.submitMs || s.firstTaskLaunchMs || t0;
  // A job whose start the log lacks (a JobEnd without its JobStart) is
  // drawn at its end, not from the epoch across the whole chart.
  const jobStart = (j) => j.submitMs || j.endMs || t0;
  const jobs = pack(rep.jobs, jobStart, (j) => j.endMs || t1, 6);
  // Stages that never ran (skipped, pending) have no times to draw.
  const ran = rep.stages.filter((s) => s.submitMs || s.firstTaskLaunchMs);
  const stages = pack(ran, stageStart, stageEnd, 12);
  const byExec = new Map();
  for (const t of rep.tasks) {
    if (!byExec.has(t.executorId)) byExec.set(t.executorId, []);
    byExec.get(t.executorId).push(t);
  }
  const execIds = [...byExec.keys()].sort((a, b) => (a === 'driver' ? -1 : b === 'driver' ? 1 : Number(a) - Number(b) || a.localeCompare(b)));
  let y = 22;
  const rows = [];
  rows.push({ kind: 'jobs', y, h: jobs.count * ROW, label: 'Jobs' });
  y += jobs.count * ROW + 6;
  rows.push({ kind: 'stages', y, h: stages.count * ROW, label: 'Stages' });
  y += stages.count * ROW + 10;
  const execRows = [];
  for (const id of execIds) {
    const tasks = byExec.get(id);
    const p = pack(tasks, (t) => t.launchMs, (t) => t.finishMs || t1, MAX_LANES);
    const h = p.count * TASK_ROW + 4;
    execRows.push({ kind: 'exec', id, y, h, label: id === 'driver' ? 'driver' : `executor ${id}`, tasks, lanes: p.lanes });
    y += h + 2;
  }
  return { t0, t1, jobs, jobStart, stages, ran, stageStart, stageEnd, rows, execRows, height: y + 6 };
}

export function Timeline({ rep, window: win, onWindow, selectedStage, onStage, stragglers }) {
  const canvas = useRef(null);
  const [width, setWidth] = useState(1000);
  const [hover, setHover] = useState(null);
  const [drag, setDrag] = useState(null);
  const L = useMemo(() => layout(rep), [rep]);
  const span = Math.max(1, L.t1 - L.t0);
  const x = (t) => GUTTER + ((t - L.t0) / span) * (width - GUTTER - 10);
  const tAt = (px) => L.t0 + ((px - GUTTER) / (width - GUTTER - 10)) * span;

  useEffect(() => {
    const el = canvas.current?.parentElement;
    if (!el) return undefined;
    const ro = new ResizeObserver(() => setWidth(Math.max(400, el.clientWidth)));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);

  // hit finds what is under a point.
  const hit = (px, py) => {
    const t = tAt(px);
    const [jobsRow, stagesRow] = L.rows;
    if (py >= stagesRow.y && py < stagesRow.y + stagesRow.h) {
      const lane = Math.floor((py - stagesRow.y) / ROW);
      const s = L.ran.find((s) => L.stages.lanes.get(s) === lane && L.stageStart(s) <= t && L.stageEnd(s) >= t);
      if (s) return { kind: 'stage', s };
    }
    if (py >= jobsRow.y && py < jobsRow.y + jobsRow.h) {
      const lane = Math.floor((py - jobsRow.y) / ROW);
      const j = rep.jobs.find((j) => L.jobs.lanes.get(j) === lane && L.jobStart(j) <= t && (j.endMs || L.t1) >= t);
      if (j) return { kind: 'job', j };
    }
    for (const r of L.execRows) {
      if (py >= r.y && py < r.y + r.h) {
        const lane = Math.floor((py - r.y - 2) / TASK_ROW);
        const tk = r.tasks.find((k) => r.lanes.get(k) === lane && k.launchMs <= t && (k.finishMs || L.t1) >= t);
        return tk ? { kind: 'task', t: tk } : { kind: 'exec', r };
      }
    }
    return null;
  };

  useEffect(() => {
    const c = canvas.current;
    if (!c) return;
    const dpr = window.devicePixelRatio || 1;
    c.width = width * dpr;
    c.height = L.height * dpr;
    c.style.width = `${width}px`;
    c.style.height = `${L.height}px`;
    const g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, width, L.height);
    g.font = '11px system-ui, sans-serif';
    // time axis
    g.fillStyle = '#555';
    g.strokeStyle = '#eee';
    const ticks = 8;
    for (let i = 0; i <= ticks; i++) {
      const t = L.t0 + (span * i) / ticks;
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
    for (const r of L.rows.concat(L.execRows)) {
      g.fillStyle = '#333';
      g.fillText(r.label, 4, r.y + Math.min(r.h, ROW) - 3);
    }
    const [jobsRow, stagesRow] = L.rows;
    for (const j of rep.jobs) {
      const y = jobsRow.y + L.jobs.lanes.get(j) * ROW;
      g.fillStyle = j.result === 'JobFailed' ? '#d9534f' : j.result ? '#6c8ebf' : '#f0ad4e';
      g.fillRect(x(L.jobStart(j)), y + 1, Math.max(1, x(j.endMs || L.t1) - x(L.jobStart(j))), ROW - 2);
    }
    const withFinding = new Set((rep.findings || []).flatMap(findingStages));
    for (const s of L.ran) {
      const y = stagesRow.y + L.stages.lanes.get(s) * ROW;
      const x0 = x(L.stageStart(s));
      const w = Math.max(2, x(L.stageEnd(s)) - x0);
      g.fillStyle = s.status === 'FAILED' ? '#d9534f' : s.status === 'COMPLETE' ? '#82b366' : s.status === 'PENDING' ? '#ccc' : '#f0ad4e';
      g.fillRect(x0, y + 1, w, ROW - 2);
      if (withFinding.has(s.stageId)) {
        g.strokeStyle = '#e67e22';
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
    }
    for (const r of L.execRows) {
      g.fillStyle = '#f7f7f7';
      g.fillRect(GUTTER, r.y, width - GUTTER - 10, r.h);
      for (const tk of r.tasks) {
        const y = r.y + 2 + r.lanes.get(tk) * TASK_ROW;
        const x0 = x(tk.launchMs);
        const w = Math.max(1, x(tk.finishMs || L.t1) - x0);
        let color = '#5b9bd5';
        if (tk.status && tk.status !== 'SUCCESS' && tk.finishMs) color = '#d9534f';
        if (!tk.finishMs) color = '#f0ad4e';
        if (stragglers.has(tk.taskId)) color = '#8b0000';
        if (selectedStage !== null && selectedStage !== undefined && tk.stageId !== selectedStage) color = '#c9d6e3';
        g.fillStyle = color;
        g.fillRect(x0, y, w, TASK_ROW - 1);
      }
    }
    const shade = (a, b) => {
      g.fillStyle = 'rgba(30, 90, 200, 0.15)';
      g.fillRect(Math.min(a, b), 14, Math.abs(b - a), L.height - 14);
    };
    if (drag && Math.abs(drag.x1 - drag.x0) > 3) shade(drag.x0, drag.x1);
    else if (win) shade(x(win[0]), x(win[1]));
  });

  const pos = (e) => {
    const r = canvas.current.getBoundingClientRect();
    return [e.clientX - r.left, e.clientY - r.top];
  };
  const describe = (h) => {
    if (!h) return '';
    switch (h.kind) {
      case 'stage':
        return `stage ${h.s.stageId}.${h.s.attempt} ${h.s.name} — ${h.s.status}, ${h.s.taskCount} tasks, ${fmtMs(h.s.durationMs)} (click to select)`;
      case 'job':
        return `job ${h.j.jobId} ${h.j.description || ''} — ${h.j.result || 'running'}, ${fmtMs(h.j.durationMs)}`;
      case 'task':
        return `task ${h.t.taskId} (stage ${h.t.stageId}, partition ${h.t.partition}) on executor ${h.t.executorId}: ${fmtMs((h.t.finishMs || L.t1) - h.t.launchMs)} ${h.t.status || ''}${stragglers.has(h.t.taskId) ? ' — straggler' : ''}`;
      case 'exec':
        return `${h.r.label}: ${h.r.tasks.length} tasks`;
      default:
        return '';
    }
  };
  return (
    <div className="timeline">
      <canvas
        ref={canvas}
        data-testid="timeline"
        onMouseDown={(e) => {
          const [px] = pos(e);
          if (px > GUTTER) setDrag({ x0: px, x1: px });
        }}
        onMouseMove={(e) => {
          const [px, py] = pos(e);
          if (drag) setDrag({ ...drag, x1: px });
          setHover(hit(px, py));
        }}
        onMouseLeave={() => setHover(null)}
        onMouseUp={(e) => {
          const [px, py] = pos(e);
          if (drag && Math.abs(px - drag.x0) > 3) {
            const a = tAt(Math.min(px, drag.x0));
            const b = tAt(Math.max(px, drag.x0));
            onWindow([Math.max(L.t0, Math.round(a)), Math.min(L.t1, Math.round(b))]);
          } else {
            const h = hit(px, py);
            if (h && h.kind === 'stage') onStage(h.s.stageId);
            else if (h && h.kind === 'task') onStage(h.t.stageId);
          }
          setDrag(null);
        }}
      />
      <div className="hover" data-testid="timeline-hover">
        {describe(hover) || 'Drag across the timeline to scope the tables and flame graph below to a time window; click a stage to select it.'}
      </div>
    </div>
  );
}
