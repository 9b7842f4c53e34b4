// Metric overlays under the timeline (CPU load, heap, GC per executor),
// drawn with uPlot on the same time range, with stage boundaries marked.
import React, { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import { fmtValue, metricUnit, metricValue } from './format';

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

// seriesLabels names each of a chart's series: its executor (or source
// file) and the values of the labels that tell it from the chart's others
// ("PS Scavenge" beside "PS MarkSweep"); a number where nothing does.
export function seriesLabels(series) {
  const differ = new Set();
  for (const s of series) {
    for (const [k, v] of Object.entries(s.labels || {})) {
      if (series.some((o) => (o.labels || {})[k] !== v)) differ.add(k);
    }
  }
  const names = series.map((s) => {
    const who = s.executorId ? `executor ${s.executorId}` : s.source || 'jvm';
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

// MetricChart draws one metric with a line per executor/series.
export function MetricChart({ chart, range, markers, width }) {
  const el = useRef(null);
  useEffect(() => {
    if (!el.current) return undefined;
    const tables = chart.series.map((s) => [s.points.map((p) => p[0] / 1000), s.points.map((p) => metricValue(s.unit, p[1]))]);
    const data = uPlot.join(tables);
    const unit = metricUnit(chart.series[0].unit);
    const labels = seriesLabels(chart.series);
    const opts = {
      width,
      height: 120,
      title: `${chart.name} (${unit})`,
      scales: { x: { time: true, min: range[0] / 1000, max: range[1] / 1000 } },
      legend: { show: chart.series.length <= 8 },
      series: [
        {},
        ...chart.series.map((s, i) => ({
          label: labels[i],
          stroke: palette[i % palette.length],
          width: 1,
          spanGaps: true,
          value: (u, v) => (v == null ? '--' : fmtValue(v, unit)),
        })),
      ],
      // Bytes and durations read in their units (MiB, s), not as raw
      // counts too wide for the axis.
      axes: [{}, { size: 80, values: (u, splits) => splits.map((v) => fmtValue(v, unit)) }],
      hooks: {
        draw: [
          (u) => {
            const g = u.ctx;
            g.save();
            g.strokeStyle = 'rgba(0,0,0,0.25)';
            g.setLineDash([3, 3]);
            for (const m of markers) {
              const px = u.valToPos(m / 1000, 'x', true);
              if (px < u.bbox.left || px > u.bbox.left + u.bbox.width) continue;
              g.beginPath();
              g.moveTo(px, u.bbox.top);
              g.lineTo(px, u.bbox.top + u.bbox.height);
              g.stroke();
            }
            g.restore();
          },
        ],
      },
    };
    const plot = new uPlot(opts, data, el.current);
    return () => plot.destroy();
  }, [chart, range[0], range[1], width, markers]);
  return <div ref={el} className="metric" data-testid="metric-chart" />;
}
