// The selection's samples over time, as Pyroscope draws them above its
// flame graph: one line in all, or one per value of a label; dragging
// across the chart narrows the range to what was dragged over.
import React, { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import { getJSON } from './api';
import { fmtMs, fmtValue, fmtTime } from './format';
import { useAsync, useWidth, ErrorBox } from './common';

const palette = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];

// maxSeries is how many values of a label get a line of their own; the
// others are summed into one line.
const maxSeries = 10;

// seriesLabels are the labels a chart may draw one line per value of.
export const seriesLabels = [
  ['', 'one line in all'],
  ['spark_executor_id', 'per executor'],
  ['host', 'per host'],
  ['spark_stage_id', 'per stage'],
  ['thread_pool', 'per thread pool'],
  ['spark_app_id', 'per app id'],
  ['service_name', 'per app'],
];

// stepOf is the step of the series of a selection: about 300 points over
// its range, where the range is known, else the server's choice (auto:
// about 300 points over the selection's samples, so that a recording of
// ten seconds is not one step).
function stepOf(sel) {
  const now = Date.now();
  const at = (t) => {
    if (!t) return null;
    const m = /^now-(\d+)([smhd])$/.exec(t);
    if (m) return now - Number(m[1]) * { s: 1e3, m: 6e4, h: 3.6e6, d: 8.64e7 }[m[2]];
    return Number.isFinite(Number(t)) ? Number(t) : null;
  };
  const from = at(sel.from);
  if (from === null) return 'auto';
  const until = at(sel.until) ?? now;
  return `${Math.max(1, Math.round((until - from) / 300 / 1000))}s`;
}

// utcTicks labels the time axis's ticks (s since the epoch) in ISO UTC,
// as precise as their spacing needs: 11:09:05.500 half a second apart,
// 11:09:05 seconds apart, 11:09 minutes apart, with the date over a day.
function utcTicks(splits, span) {
  const gap = splits.length > 1 ? splits[1] - splits[0] : span;
  return splits.map((v) => {
    if (v == null) return '';
    const iso = new Date(v * 1000).toISOString(); // 2024-01-16T11:09:05.500Z
    const time = gap < 1 ? iso.slice(11, 23) : gap < 60 ? iso.slice(11, 19) : iso.slice(11, 16);
    return span < 86400 ? time : `${iso.slice(0, 10)} ${time}`;
  });
}

// topSeries keeps the maxSeries - 1 series with the most in them and sums
// the rest into one named "other".
function topSeries(series) {
  const sum = (s) => s.points.reduce((a, p) => a + p[1], 0);
  if (series.length <= maxSeries) return series;
  const sorted = [...series].sort((a, b) => sum(b) - sum(a));
  const rest = new Map();
  for (const s of sorted.slice(maxSeries - 1)) for (const [t, v] of s.points) rest.set(t, (rest.get(t) || 0) + v);
  return [...sorted.slice(0, maxSeries - 1), { key: `${series.length - maxSeries + 1} others`, points: [...rest.entries()].sort((a, b) => a[0] - b[0]) }];
}

// SampleSeries draws the samples of sel ({query, type, from, until,
// state}) over time, a line per value of label by; onRange is called with
// [from, until] (ms) dragged over.
export function SampleSeries({ sel, by, onRange }) {
  const [box, width] = useWidth(900);
  const el = useRef(null);
  const { data, error } = useAsync(() => getJSON('/api/v1/series', { ...sel, by, step: stepOf(sel) }), [JSON.stringify(sel), by], { defer: true });
  useEffect(() => {
    if (!data || !el.current) return undefined;
    const series = topSeries(data.series || []);
    if (series.length === 0) return undefined;
    const tables = series.map((s) => [s.points.map((p) => p[0] / 1000), s.points.map((p) => p[1])]);
    const unit = data.type.unit;
    const opts = {
      width,
      height: 140,
      scales: { x: { time: true } },
      // Times read in UTC, as everywhere in the UI, not in the browser's
      // local time and date order.
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC'),
      legend: { show: true },
      cursor: { drag: { x: true, y: false, setScale: false } },
      series: [
        { value: (u, v) => (v == null ? '' : fmtTime(v * 1000)) },
        ...series.map((s, i) => ({
          label: by ? s.key || '(none)' : `${data.type.name} per ${fmtMs(data.stepMs)}`,
          stroke: palette[i % palette.length],
          width: 1,
          points: { show: false },
          value: (u, v) => (v == null ? '--' : fmtValue(v, unit)),
        })),
      ],
      axes: [
        {
          space: 100, // room for 11:09:05.500
          values: (u, splits) => {
            const labels = utcTicks(splits, u.scales.x.max - u.scales.x.min);
            if (el.current) el.current.dataset.xTicks = labels.join('|');
            return labels;
          },
        },
        { size: 80, values: (u, splits) => splits.map((v) => fmtValue(v, unit)) },
      ],
      hooks: {
        setSelect: [
          (u) => {
            if (u.select.width < 3) return;
            const a = u.posToVal(u.select.left, 'x');
            const b = u.posToVal(u.select.left + u.select.width, 'x');
            u.setSelect({ left: 0, width: 0 }, false);
            onRange([Math.floor(a * 1000), Math.ceil(b * 1000)]);
          },
        ],
      },
    };
    const plot = new uPlot(opts, uPlot.join(tables), el.current);
    return () => plot.destroy();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [data, width]);
  if (error) return <ErrorBox error={error} />;
  const n = data?.series?.length || 0;
  return (
    <div ref={box} className="sample-series" data-testid="sample-series" data-series={data ? Math.min(n, maxSeries) : ''} data-step-ms={data ? data.stepMs : ''}>
      {data && n === 0 && <div className="muted">No samples with a time in this range.</div>}
      <div ref={el} data-testid="sample-series-plot" />
      <div className="hint muted">Drag across the chart to narrow the range to that stretch.</div>
    </div>
  );
}
