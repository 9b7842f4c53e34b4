// Painting a FlameTree on a canvas, and finding the frame under a point.
// A view is the tree zoomed to one node (focus): its callers are drawn the
// full width above it, and the nodes under it spread over the width.
// Frames narrower than half a pixel are left out; only the nodes in view
// are visited, by binary search in each level.
import { shortenFront } from '../names.js';

// ROW is the height of a frame in CSS pixels.
export const ROW = 18;
export const FONT = '12px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace';

// Frames are coloured by package, so that a library's frames read as one
// block; a hash of the package picks one of these. Python frames
// ("file.py:function") take the last four, teals no JVM frame has, so that
// a PySpark worker's frames stand apart from the JVM's beside them.
const palette = [
  '#f6a05a', '#f4c55c', '#e6806a', '#f2b880', '#d9a35f', '#eb9f8a', '#f0cf8a', '#de8d4d',
  '#9fc58a', '#86b7d6', '#b69ad6', '#e3a6c4', '#c8c76b', '#d8b4a0', '#a8b8e8',
  '#5fb3a5', '#7cc4b8', '#4ea193', '#93d0c5',
];
const jvmColors = 15;
const pythonColors = palette.length - jvmColors;

// isPython reports whether name is a Python frame: "file.py:function".
export function isPython(name) {
  return /\.pyx?:/.test(name);
}
const faded = '#e2e2e2';

// packageEnd is where the package of a name ends, before its class and
// method: "org.apache.spark.rdd" of "org.apache.spark.rdd.RDD.iterator".
function packageEnd(name) {
  let end = name.indexOf('(');
  if (end < 0) end = name.length;
  const method = name.lastIndexOf('.', end - 1);
  const cls = method > 0 ? name.lastIndexOf('.', method - 1) : -1;
  return cls > 0 ? cls : method > 0 ? method : end;
}

// colorIndex returns the palette index of name by a hash of its package:
// a Python frame's is its file's directory.
function colorIndex(name) {
  const python = isPython(name);
  const end = python ? Math.max(0, name.lastIndexOf('/', name.indexOf('.py'))) : packageEnd(name);
  let h = 2166136261;
  for (let i = 0; i < end; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 16777619);
  }
  return python ? jvmColors + (h >>> 0) % pythonColors : (h >>> 0) % jvmColors;
}

// colorOf returns the fill of name index i, cached per tree in cache (an
// Int8Array by name index, -1 until known).
function colorOf(cache, names, i) {
  let c = cache[i];
  if (c < 0) {
    c = colorIndex(names[i] || '');
    cache[i] = c;
  }
  return palette[c];
}

// colorCache returns an empty cache of the colours of t's names.
export function colorCache(t) {
  return new Int8Array(t.names.length).fill(-1);
}

// diffColor is red where the comparison's share grew, blue where it
// shrank, grey where it stayed, deeper the larger the change against the
// frame's larger share.
function diffColor(t, i) {
  const a = t.base[0] ? t.base[i] / t.base[0] : 0;
  const b = t.total[0] ? t.total[i] / t.total[0] : 0;
  const m = Math.max(a, b);
  const r = m ? (b - a) / m : 0;
  const k = Math.min(1, Math.abs(r));
  if (k < 0.05) return 'rgb(220,220,220)';
  const mix = (x, y) => Math.round(x + (y - x) * k);
  return r > 0 ? `rgb(${mix(235, 215)},${mix(220, 48)},${mix(220, 39)})` : `rgb(${mix(220, 26)},${mix(225, 110)},${mix(235, 230)})`;
}

// viewOf returns the span [x0, x1) of the tree's width that the view of
// focus shows, and the scale from shares to pixels of a width px wide.
export function viewOf(t, focus, width) {
  const x0 = t.x[focus];
  const span = t.w[focus] || 1;
  return { x0, x1: x0 + span, k: width / span };
}

// rowY is the top of depth d's row; an inverted tree grows upwards from
// the bottom (the callers of the sandwich view).
function rowY(t, d, inverted) {
  return inverted ? (t.maxDepth - d) * ROW : d * ROW;
}

// paint draws t zoomed to focus on g, width CSS pixels wide. named marks
// the names a search matched (or selected), which keep their colour while
// the rest fade; counts of what was drawn are returned.
export function paint(g, t, { focus = 0, width, inverted = false, named = null, cache }) {
  const height = (t.maxDepth + 1) * ROW;
  g.clearRect(0, 0, width, height);
  g.font = FONT;
  g.textBaseline = 'middle';
  const charW = g.measureText('m').width || 7;
  const { x0, x1, k } = viewOf(t, focus, width);
  let drawn = 0;
  const bar = (i, px, pw, y) => {
    let fill = t.diff ? diffColor(t, i) : colorOf(cache, t.names, t.name[i]);
    if (named && !named[t.name[i]]) fill = faded;
    g.fillStyle = fill;
    g.fillRect(px, y, Math.max(pw - 1, 0.5), ROW - 1);
    drawn++;
    const chars = Math.floor((pw - 6) / charW);
    if (chars >= 5) {
      g.fillStyle = '#222';
      g.fillText(shortenFront(t.readable(t.name[i]), chars), px + 3, y + ROW / 2);
    }
  };
  // The focus's callers, full width.
  for (let a = t.parent[focus], d = t.depth[focus] - 1; a >= 0; a = t.parent[a], d--) {
    bar(a, 0, width, rowY(t, d, inverted));
  }
  const min = 0.5 / k; // narrower than half a pixel: left out
  for (let d = t.depth[focus]; d <= t.maxDepth; d++) {
    const [, hi] = t.level(d);
    const y = rowY(t, d, inverted);
    for (let i = t.firstAt(d, x0 + 1e-12); i < hi && t.x[i] < x1 - 1e-12; i++) {
      if (t.w[i] < min) continue;
      bar(i, (t.x[i] - x0) * k, t.w[i] * k, y);
    }
  }
  return { drawn, height };
}

// nodeAt returns the node drawn at (px, py) in the view of focus, or -1.
export function nodeAt(t, { focus = 0, width, inverted = false }, px, py) {
  const row = Math.floor(py / ROW);
  const d = inverted ? t.maxDepth - row : row;
  if (d < 0 || d > t.maxDepth) return -1;
  if (d < t.depth[focus]) {
    let a = focus;
    while (t.depth[a] > d) a = t.parent[a];
    return a;
  }
  const { x0, k } = viewOf(t, focus, width);
  const x = x0 + px / k;
  const [, hi] = t.level(d);
  const i = t.firstAt(d, x);
  if (i < hi && t.x[i] <= x && t.w[i] * k >= 0.5) return i;
  return -1;
}
