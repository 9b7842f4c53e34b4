// Metric charts under the timeline (CPU load, heap, GC per executor, the
// profile samples), drawn with uPlot along the timeline's own time axis:
// the same pixels for the same times, stretches without tasks compressed
// alike, so that a drop in CPU lines up with the tasks above it.
import React, { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import { fmtMs, fmtValue, metricUnit, metricValue } from './format';
import { ticks } from './timeScale';
import { GUTTER, RIGHT } from './timelineDraw';

const preferred = ['process.cpu.load', 'system.cpu.load', 'jvm.heap.used', 'jvm.gc.time', 'jvm.gc.pause'];
const palette = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f'];

// chartsOf groups the report's series by metric name, preferred names first.
export function chartsOf(metrics) {
  const by = new Map();
  for (const m of metrics || []) {
    if (!by.has(m.name)) by.set(m.name, []);
    by.get(m.name).push(m);
  }
  const names = [...by.keys()].sort((a, b) => {
    const ia = preferred.indexOf(a);
    const ib = preferred.indexOf(b);
    return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || a.localeCompare(b);
  });
  return names.map((name) => ({ name, series: by.get(name) }));
}

// whoOf names the JVM a series is of: its executor, else its host (a
// process label is pid@host, as jvm-profiler names it), else its source.
function whoOf(s) {
  if (s.executorId) return s.executorId === 'driver' ? 'driver' : `executor ${s.executorId}`;
  const labels = s.labels || {};
  const host = labels.host || (labels.process || '').replace(/^\d+@/, '');
  if (host) return host;
  return s.source || 'jvm';
}

// seriesLabels names each of a chart's series: its executor (or host) and
// the values of the labels that tell it from the chart's others ("PS
// Scavenge" beside "PS MarkSweep"; the process beside another on its
// host); a number where nothing does.
export function seriesLabels(series) {
  const differ = new Set();
  for (const s of series) {
    for (const [k, v] of Object.entries(s.labels || {})) {
      if (k !== 'host' && series.some((o) => (o.labels || {})[k] !== v)) differ.add(k);
    }
  }
  const names = series.map((s) => {
    const who = whoOf(s);
    const detail = [...differ].sort().map((k) => (s.labels || {})[k]).filter(Boolean);
    return detail.length ? `${who}: ${detail.join(', ')}` : who;
  });
  const count = new Map();
  for (const n of names) count.set(n, (count.get(n) || 0) + 1);
  const seen = new Map();
  return names.map((n) => {
    if (count.get(n) < 2) return n;
    seen.set(n, (seen.get(n) || 0) + 1);
    return `${n} #${seen.get(n)}`;
  });
}

// MetricChart draws one metric with a line per executor or series along
// the time axis sc (timeScale.makeScale) of a chart width pixels wide;
// markers are times marked with dashed lines (stage boundaries), and
// onWindow is told the times of a range dragged across it.
export function MetricChart({ chart, sc, markers, width, onWindow }) {
  const el = useRef(null);
  useEffect(() => {
    if (!el.current) return undefined;
    const tables = chart.series.map((s) => [s.points.map((p) => p[0]), s.points.map((p) => metricValue(s.unit, p[1]))]);
    const data = uPlot.join(tables);
    const unit = metricUnit(chart.series[0].unit);
    const labels = seriesLabels(chart.series);
    const opts = {
      width,
      height: 130,
      title: `${chart.name} (${unit})`,
      // The plot starts at the timeline's gutter and ends at its margin.
      padding: [8, RIGHT, 0, 0],
      scales: { x: { time: false, distr: 100, fwd: (t) => sc.x(t), bwd: (x) => sc.t(x), min: sc.t0, max: sc.t1 } },
      legend: { show: chart.series.length <= 8 },
      cursor: { drag: { x: Boolean(onWindow), y: false, setScale: false } },
      series: [
        { label: 'time', value: (u, v) => (v == null ? '' : fmtMs(v - sc.origin)) },
        ...chart.series.map((s, i) => ({
          label: labels[i],
          stroke: palette[i % palette.length],
          width: 1,
          spanGaps: true,
          points: { show: false },
          value: (u, v) => (v == null ? '--' : fmtValue(v, unit)),
        })),
      ],
      axes: [
        {
          splits: () => ticks(sc).map((tk) => tk.t),
          // Every split is a tick: uPlot's default filter for a custom
          // scale (distr 100) is its log-10 one, which blanks all but the
          // powers of ten.
          filter: (u, splits) => splits,
          values: (u, vs) => {
            const labels = vs.map((v) => (v == null ? '' : fmtMs(v - sc.origin)));
            if (el.current) el.current.dataset.xTicks = labels.join('|');
            return labels;
          },
        },
        // Bytes and durations read in their units (MiB, s), not as raw
        // counts too wide for the axis.
        { size: GUTTER, values: (u, splits) => splits.map((v) => fmtValue(v, unit)) },
      ],
      hooks: {
        draw: [
          (u) => {
            const g = u.ctx;
            g.save();
            g.strokeStyle = 'rgba(0,0,0,0.25)';
            g.setLineDash([3, 3]);
            for (const m of markers) {
              if (m < sc.t0 || m > sc.t1) continue;
              const px = u.valToPos(m, 'x', true);
              g.beginPath();
              g.moveTo(px, u.bbox.top);
              g.lineTo(px, u.bbox.top + u.bbox.height);
              g.stroke();
            }
            g.fillStyle = 'rgba(0,0,0,0.06)';
            for (const s of sc.segments) {
              if (!s.compressed) continue;
              const a = u.valToPos(s.t0, 'x', true);
              g.fillRect(a, u.bbox.top, u.valToPos(s.t1, 'x', true) - a, u.bbox.height);
            }
            g.restore();
          },
        ],
        setSelect: [
          (u) => {
            if (!onWindow || u.select.width < 3) return;
            const a = u.posToVal(u.select.left, 'x');
            const b = u.posToVal(u.select.left + u.select.width, 'x');
            u.setSelect({ left: 0, width: 0 }, false);
            onWindow([Math.round(a), Math.round(b)]);
          },
        ],
      },
    };
    const plot = new uPlot(opts, data, el.current);
    el.current.dataset.plotLeft = String(Math.round(plot.bbox.left / (window.devicePixelRatio || 1)));
    return () => plot.destroy();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [chart, sc, width, markers]);
  return <div ref={el} className="metric" data-testid="metric-chart" />;
}
