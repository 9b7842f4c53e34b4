// The application timeline on a canvas, as the app page and the offline
// report draw it: jobs and stages as a Gantt chart, one band of task lanes
// per executor (idle ones too, with their life and why they ended), tasks
// coloured by phase, and the metric charts under it along the same time
// axis. Long stretches without a running task are compressed and
// labelled. Dragging across it zooms to the range dragged over (and, given
// onWindow, scopes the page to it); hovering shows what is under the
// pointer; clicking a stage or a task selects the stage (given onStage).
import React, { useEffect, useMemo, useRef, useState } from 'react';
import { layout } from './timelineLayout';
import { GUTTER, RIGHT, colors, phaseColors, draw } from './timelineDraw';
import { idleStretches, makeScale, taskSpans } from './timeScale';
import { MetricChart } from './Metrics';
import { phases } from './tasks';
import { fmtMs, fmtTime } from './format';
import { useWidth } from './common';

// describe says what a hit area of the chart is; at is the time origin.
function describe(h, L, stragglers, clickable, at) {
  switch (h.kind) {
    case 'stage':
      return `stage ${h.s.stageId}.${h.s.attempt} ${h.s.name} — ${h.s.status}, ${h.s.taskCount} tasks, ${fmtMs(h.s.durationMs)}${clickable ? ' (click to select)' : ''}`;
    case 'job':
      return `job ${h.j.jobId} ${h.j.description || ''} — ${h.j.result || 'running'}, ${fmtMs(h.j.durationMs)}`;
    case 'task': {
      const t = h.t;
      const straggler = stragglers.has(t.taskId) ? ' — straggler' : '';
      const split = t.noMetrics
        ? '\nphases unknown: no task metrics (a container log gives only its times)'
        : t.finishMs
        ? `\n${phases
            .filter(([k]) => t[k] > 0)
            .map(([k, name]) => `${name} ${fmtMs(t[k])}`)
            .join(' · ')}`
        : '';
      return `task ${t.taskId} (stage ${t.stageId}, partition ${t.partition}) on executor ${t.executorId}: ${fmtMs((t.finishMs || L.t1) - t.launchMs)} ${t.status || ''}${straggler}${split}`;
    }
    case 'exec': {
      const r = h.r;
      const life = `${r.addedMs ? `added at ${fmtMs(r.addedMs - at)}` : ''}${r.removedMs ? `, removed at ${fmtMs(r.removedMs - at)}: ${r.removalReason || 'no reason given'}` : ''}`;
      return `${r.label}${r.host ? ` on ${r.host}` : ''}: ${r.tasks.length} tasks${life ? `; ${life}` : ''}`;
    }
    case 'added':
      return `${h.r.label} added at ${fmtMs(h.r.addedMs - at)} (${fmtTime(h.r.addedMs)})`;
    case 'removed':
      return `${h.r.label} removed at ${fmtMs(h.r.removedMs - at)} (${fmtTime(h.r.removedMs)}): ${h.r.removalReason || 'no reason given'}`;
    case 'gap':
      return `${fmtMs(h.s.t1 - h.s.t0)} without a running task (${fmtMs(h.s.t0 - at)} – ${fmtMs(h.s.t1 - at)}), compressed`;
    default:
      return '';
  }
}

// Legend names the colours of the chart.
function Legend() {
  const swatch = (color, name, border) => (
    <span key={name}>
      <i style={border ? { border: `2px solid ${color}` } : { background: color }} /> {name}
    </span>
  );
  return (
    <div className="legend" data-testid="timeline-legend">
      {phases.map(([k, name]) => swatch(phaseColors[k], name))}
      {swatch(colors.failed, 'failed')}
      {swatch(colors.killed, 'killed')}
      {swatch(colors.active, 'running')}
      {swatch(colors.straggler, 'straggler')}
      {swatch(colors.unknown, 'phases unknown')}
      {swatch(colors.finding, 'stage with a finding', true)}
      {swatch(colors.added, 'executor added')}
      {swatch(colors.removed, 'executor removed')}
      {swatch(colors.dead, 'executor not running')}
    </div>
  );
}

// minGapShare is the share of the view a stretch without tasks must last
// to be compressed.
const minGapShare = 0.06;

// Timeline draws rep (a report: app, jobs, stages, tasks, executors,
// findings) with the tasks in stragglers marked and selectedStage's tasks
// to the fore, and charts ({name, series}) under it; markers are times the
// charts mark (stage boundaries). window [from, until] is the view, when
// the page keeps it (onWindow is told a new one, null to zoom out);
// otherwise the timeline keeps its own. The canvas carries counts of what
// it drew (data-jobs, data-stages, data-tasks, data-stragglers,
// data-executors, data-idle-executors, data-removed, data-gaps).
export function Timeline({ rep, window: win, onWindow, selectedStage, onStage, stragglers, charts = [], markers = [] }) {
  const canvas = useRef(null);
  const hits = useRef([]);
  const [box, width] = useWidth(1000, 400);
  const [own, setOwn] = useState(null);
  const [hover, setHover] = useState(null);
  const [drag, setDrag] = useState(null);
  const L = useMemo(() => layout(rep), [rep]);
  const spans = useMemo(() => taskSpans(rep.tasks, L.t1), [rep, L]);
  const view = (onWindow ? win : own) || [L.t0, L.t1];
  const setView = onWindow || setOwn;
  const sc = useMemo(() => {
    const gaps = idleStretches(spans, view[0], view[1], Math.max(1000, (view[1] - view[0]) * minGapShare));
    return makeScale(view[0], view[1], GUTTER, width - GUTTER - RIGHT, gaps, L.t0);
  }, [spans, view[0], view[1], width, L]);

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
    const shade = drag && Math.abs(drag.x1 - drag.x0) > 3 ? [drag.x0, drag.x1] : null;
    const out = draw(g, L, sc, width, { findings: rep.findings, stragglers, selectedStage, shade });
    hits.current = out.hits;
    Object.assign(c.dataset, out.drawn);
  }, [L, sc, width, drag, selectedStage, stragglers, rep.findings]);

  // hit finds the topmost thing drawn under a point.
  const hit = (px, py) => {
    for (let i = hits.current.length - 1; i >= 0; i--) {
      const h = hits.current[i];
      if (px >= h.x && px <= h.x + h.w && py >= h.y && py < h.y + h.h) return h;
    }
    return null;
  };
  const pos = (e) => {
    const r = canvas.current.getBoundingClientRect();
    return [e.clientX - r.left, e.clientY - r.top];
  };
  const zoomed = view[0] !== L.t0 || view[1] !== L.t1;
  const text = hover && describe(hover.h, L, stragglers, Boolean(onStage), L.t0);
  return (
    <div className="timeline" ref={box}>
      <Legend />
      <div className="timeline-zoom muted">
        Drag across the timeline or a chart to zoom{onWindow ? ' and scope the tables and flame graph below to that time' : ''}
        {onStage ? '; click a stage or a task to select its stage' : ''}.{' '}
        {zoomed && (
          <>
            Showing {fmtMs(view[0] - L.t0)} – {fmtMs(view[1] - L.t0)}.{' '}
            <button onClick={() => setView(null)} data-testid="zoom-out">
              zoom out
            </button>
          </>
        )}
      </div>
      <canvas
        ref={canvas}
        data-testid="timeline"
        data-view={`${view[0]},${view[1]}`}
        onMouseDown={(e) => {
          const [px] = pos(e);
          if (px > GUTTER) setDrag({ x0: px, x1: px });
        }}
        onMouseMove={(e) => {
          const [px, py] = pos(e);
          if (drag) setDrag({ ...drag, x1: px });
          const h = hit(px, py);
          setHover(h ? { h, cx: e.clientX, cy: e.clientY } : null);
        }}
        onMouseLeave={() => {
          setHover(null);
          setDrag(null);
        }}
        onMouseUp={(e) => {
          const [px, py] = pos(e);
          if (drag && Math.abs(px - drag.x0) > 3) {
            const a = sc.t(Math.max(GUTTER, Math.min(px, drag.x0)));
            const b = sc.t(Math.min(width - RIGHT, Math.max(px, drag.x0)));
            setView([Math.round(a), Math.round(b)]);
          } else if (onStage) {
            const h = hit(px, py);
            if (h && h.kind === 'stage') onStage(h.s.stageId);
            else if (h && h.kind === 'task') onStage(h.t.stageId);
          }
          setDrag(null);
        }}
      />
      {text && (
        <div className="timeline-tip" data-testid="timeline-tip" style={{ left: Math.min(hover.cx + 12, window.innerWidth - 420), top: hover.cy + 14 }}>
          {text}
        </div>
      )}
      <div className="charts">
        {charts.map((c) => (
          <MetricChart key={c.name} chart={c} sc={sc} markers={markers} width={width} onWindow={setView} />
        ))}
      </div>
    </div>
  );
}
