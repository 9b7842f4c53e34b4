// The application timeline on a canvas, as the app page and the offline
// report draw it: jobs and stages as a Gantt chart, a row per metric
// series of no executor, then one band of task lanes per executor with its
// CPU, heap and GC series drawn over it. Hovering shows what is under the
// pointer; dragging brushes a time window (given onWindow); clicking a
// stage or a task selects the stage (given onStage).
import React, { useEffect, useMemo, useRef, useState } from 'react';
import { layout } from './timelineLayout';
import { GUTTER, colors, draw, scale } from './timelineDraw';
import { fmtMs, fmtValue, metricUnit, metricValue } from './format';

// describe says what a hit area of the chart is.
function describe(h, L, stragglers, clickable) {
  switch (h.kind) {
    case 'stage':
      return `stage ${h.s.stageId}.${h.s.attempt} ${h.s.name} — ${h.s.status}, ${h.s.taskCount} tasks, ${fmtMs(h.s.durationMs)}${clickable ? ' (click to select)' : ''}`;
    case 'job':
      return `job ${h.j.jobId} ${h.j.description || ''} — ${h.j.result || 'running'}, ${fmtMs(h.j.durationMs)}`;
    case 'task': {
      const t = h.t;
      const straggler = stragglers.has(t.taskId) ? ' — straggler' : '';
      return `task ${t.taskId} (stage ${t.stageId}, partition ${t.partition}) on executor ${t.executorId}: ${fmtMs((t.finishMs || L.t1) - t.launchMs)} ${t.status || ''}${straggler}`;
    }
    case 'exec':
      return `${h.r.label}: ${h.r.tasks.length} tasks${h.r.series.length ? `, ${h.r.series.map((m) => m.name).join(', ')} drawn over them` : ''}`;
    case 'metric': {
      const m = h.m;
      const labels = Object.entries(m.labels || {}).map(([k, v]) => `${k}=${v}`);
      const unit = metricUnit(m.unit);
      const hi = m.points.reduce((a, p) => Math.max(a, p[1]), 0);
      return `${m.name}${labels.length ? ` {${labels.join(', ')}}` : ''} (${unit})${m.source ? ` from ${m.source}` : ''}, max ${fmtValue(metricValue(m.unit, hi), unit)}`;
    }
    default:
      return '';
  }
}

// Legend names the colours of the chart and switches the metric overlays.
function Legend({ overlays, setOverlays, hasMetrics }) {
  const swatch = (color, name, border) => (
    <span>
      <i style={border ? { border: `2px solid ${color}` } : { background: color }} /> {name}
    </span>
  );
  return (
    <div className="legend" data-testid="timeline-legend">
      {swatch(colors.task, 'task')}
      {swatch(colors.failed, 'failed')}
      {swatch(colors.killed, 'killed')}
      {swatch(colors.active, 'running')}
      {swatch(colors.straggler, 'straggler')}
      {swatch(colors.finding, 'stage with a finding', true)}
      {hasMetrics && (
        <label>
          <input type="checkbox" checked={overlays} onChange={(e) => setOverlays(e.target.checked)} data-testid="timeline-overlays" />{' '}
          <i style={{ background: colors.overlay }} /> metric overlays
        </label>
      )}
    </div>
  );
}

// Timeline draws rep (a report: app, jobs, stages, tasks, executors,
// findings, metrics), with the tasks in stragglers marked, the window
// [from, until] shaded and selectedStage's tasks to the fore; the metric
// overlays are shown at first unless showOverlays is false. The canvas
// carries counts of what it drew (data-jobs, data-stages, data-tasks,
// data-stragglers, data-metric-rows, data-overlays).
export function Timeline({ rep, window: win, onWindow, selectedStage, onStage, stragglers, showOverlays = true }) {
  const canvas = useRef(null);
  const hits = useRef([]);
  const [width, setWidth] = useState(1000);
  const [overlays, setOverlays] = useState(showOverlays);
  const [hover, setHover] = useState(null);
  const [drag, setDrag] = useState(null);
  const L = useMemo(() => layout(rep, overlays), [rep, overlays]);
  const sc = scale(L, width);

  useEffect(() => {
    const el = canvas.current?.parentElement;
    if (!el) return undefined;
    const ro = new ResizeObserver(() => setWidth(Math.max(400, el.clientWidth)));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);

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
    const dragged = drag && Math.abs(drag.x1 - drag.x0) > 3;
    const shade = dragged ? [drag.x0, drag.x1] : win ? [sc.x(win[0]), sc.x(win[1])] : null;
    const out = draw(g, L, width, { findings: rep.findings, stragglers, selectedStage, shade });
    hits.current = out.hits;
    Object.assign(c.dataset, out.drawn);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [L, width, win?.[0], win?.[1], drag, selectedStage, stragglers, rep.findings]);

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
  const hint = [onWindow && 'drag across the timeline to scope the tables and flame graph below to a time window', onStage && 'click a stage to select it']
    .filter(Boolean)
    .join('; ')
    .replace(/^./, (c) => c.toUpperCase());
  const text = hover && describe(hover.h, L, stragglers, Boolean(onStage));
  return (
    <div className="timeline">
      <Legend overlays={overlays} setOverlays={setOverlays} hasMetrics={(rep.metrics || []).length > 0} />
      <canvas
        ref={canvas}
        data-testid="timeline"
        onMouseDown={(e) => {
          const [px] = pos(e);
          if (onWindow && px > GUTTER) setDrag({ x0: px, x1: px });
        }}
        onMouseMove={(e) => {
          const [px, py] = pos(e);
          if (drag) setDrag({ ...drag, x1: px });
          const h = hit(px, py);
          setHover(h ? { h, cx: e.clientX, cy: e.clientY } : null);
        }}
        onMouseLeave={() => setHover(null)}
        onMouseUp={(e) => {
          const [px, py] = pos(e);
          if (drag && Math.abs(px - drag.x0) > 3) {
            const a = sc.t(Math.min(px, drag.x0));
            const b = sc.t(Math.max(px, drag.x0));
            onWindow([Math.max(L.t0, Math.round(a)), Math.min(L.t1, Math.round(b))]);
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
      {hint && <div className="hint muted">{hint}.</div>}
    </div>
  );
}
