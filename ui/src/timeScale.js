// The time axis of an application's timeline, shared by its Gantt chart
// and every metric chart under it: a view [t0, t1] mapped onto a plot,
// with the long stretches in which no task ran compressed to a narrow
// labelled band, so that an app whose tasks start after minutes of driver
// work does not squeeze them into a corner.
import { fmtMs } from './format.js';

// BAND is the width in pixels of a compressed stretch.
export const BAND = 64;

// taskSpans returns the times tasks ran, [launch, finish] pairs sorted by
// launch, for idleStretches: sorted once per report, not at each zoom.
// tasks have launchMs and finishMs (0 while running: until t1).
export function taskSpans(tasks, t1) {
  const order = tasks.map((t, i) => i).sort((a, b) => tasks[a].launchMs - tasks[b].launchMs);
  const spans = new Float64Array(2 * tasks.length);
  order.forEach((i, k) => {
    spans[2 * k] = tasks[i].launchMs;
    spans[2 * k + 1] = tasks[i].finishMs || t1;
  });
  return spans;
}

// idleStretches returns the stretches of [t0, t1] in which no task ran,
// longer than minMs, in time order, of spans (taskSpans).
export function idleStretches(spans, t0, t1, minMs) {
  const out = [];
  let at = t0;
  let any = false;
  for (let k = 0; k < spans.length; k += 2) {
    const a = Math.max(spans[k], t0);
    const b = Math.min(spans[k + 1], t1);
    if (b <= t0 || a >= t1) continue;
    if (a - at > minMs) out.push([at, a]);
    at = Math.max(at, b);
    any = true;
  }
  if (!any) return [];
  if (t1 - at > minMs) out.push([at, t1]);
  return out;
}

// makeScale maps the view [t0, t1] onto the plot [left, left + width]
// pixels, each stretch of gaps (inside the view) BAND pixels wide and the
// rest of the time linear. x(t) gives a pixel, t(x) a time; segments
// lists the pieces, compressed or not; origin is the time labels count
// from.
export function makeScale(t0, t1, left, width, gaps = [], origin = t0) {
  const span = Math.max(1, t1 - t0);
  let squeezed = gaps.reduce((a, [g0, g1]) => a + g1 - g0, 0);
  // The bands never take more than a third of the plot.
  const bandW = gaps.length ? Math.min(BAND, width / 3 / gaps.length) : 0;
  if (squeezed >= span) squeezed = 0;
  const linear = Math.max(1, width - bandW * gaps.length);
  const perMs = linear / Math.max(1, span - squeezed);
  const segments = [];
  let at = t0;
  let px = left;
  const push = (a, b, compressed) => {
    const w = compressed ? bandW : (b - a) * perMs;
    segments.push({ t0: a, t1: b, x0: px, x1: px + w, compressed });
    px += w;
  };
  for (const [g0, g1] of gaps) {
    if (g0 > at) push(at, g0, false);
    push(g0, g1, true);
    at = g1;
  }
  if (at < t1 || segments.length === 0) push(at, t1, false);
  const find = (v, lo, hi) => segments.find((s) => v >= s[lo] && v <= s[hi]) || (v < segments[0][lo] ? segments[0] : segments[segments.length - 1]);
  return {
    t0,
    t1,
    left,
    width,
    origin,
    segments,
    x(t) {
      const s = find(t, 't0', 't1');
      return s.x0 + ((t - s.t0) / Math.max(1, s.t1 - s.t0)) * (s.x1 - s.x0);
    },
    t(x) {
      const s = find(x, 'x0', 'x1');
      return s.t0 + ((x - s.x0) / Math.max(1e-9, s.x1 - s.x0)) * (s.t1 - s.t0);
    },
  };
}

// niceSteps are the tick intervals an axis picks from, in ms.
const niceSteps = [
  1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 15e3, 3e4, 6e4, 12e4, 3e5, 6e5, 9e5, 18e5, 36e5, 72e5, 108e5, 216e5, 432e5, 864e5,
];

// ticks returns the ticks of scale sc, about every minGap pixels in each
// linear stretch: [{t, x, label}], labels the time since sc.origin.
export function ticks(sc, minGap = 90) {
  const out = [];
  for (const s of sc.segments) {
    if (s.compressed) continue;
    const perPx = (s.t1 - s.t0) / Math.max(1, s.x1 - s.x0);
    const step = niceSteps.find((n) => n / perPx >= minGap) || niceSteps[niceSteps.length - 1];
    const first = Math.ceil((s.t0 - sc.origin) / step) * step + sc.origin;
    for (let t = first; t <= s.t1; t += step) {
      const x = sc.x(t);
      if (out.length && x - out[out.length - 1].x < minGap / 2) continue;
      out.push({ t, x, label: fmtMs(t - sc.origin) });
    }
  }
  return out;
}
