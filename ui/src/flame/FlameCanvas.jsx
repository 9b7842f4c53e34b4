// One flame graph on a canvas: a FlameTree zoomed to a frame, with a
// tooltip at the pointer. Clicking a frame zooms to it (the root, or a
// caller above the zoomed frame, zooms out).
import React, { useEffect, useMemo, useRef, useState } from 'react';
import { colorCache, paint, nodeAt, ROW } from './draw';
import { fmtPercent } from '../format';
import { useWidth } from '../common';

// useTreeState is useState for a value about tree t (a node, a name
// index): it goes back to initial when the tree changes.
export function useTreeState(t, initial) {
  const [s, setS] = useState({ t, v: initial });
  return [s.t === t ? s.v : initial, (v) => setS({ t, v })];
}

// Tip says what frame i is: its full name and values, as shares of the
// tree's root (in a diff, of each side's own total).
function Tip({ t, i, fmt, pos }) {
  const raw = t.names[t.name[i]];
  const name = t.readable(t.name[i]);
  const share = (v, root) => (root ? fmtPercent(v / root) : '–');
  let lines;
  if (t.diff) {
    const a = t.base[0] ? t.base[i] / t.base[0] : 0;
    const b = t.total[0] ? t.total[i] / t.total[0] : 0;
    const change = 100 * (b - a);
    lines = [
      `Baseline: ${fmt(t.base[i])} (${share(t.base[i], t.base[0])} of its total), self ${fmt(t.baseSelf[i])}`,
      `Comparison: ${fmt(t.total[i])} (${share(t.total[i], t.total[0])} of its total), self ${fmt(t.self[i])}`,
      `Change: ${change >= 0 ? '+' : ''}${change.toFixed(2)} points of the total`,
    ];
  } else {
    lines = [`Total: ${fmt(t.total[i])} (${share(t.total[i], t.total[0])})`, `Self: ${fmt(t.self[i])} (${share(t.self[i], t.total[0])})`];
  }
  return (
    <div className="flame-tip" data-testid="flame-tooltip" style={{ left: Math.min(pos[0] + 14, window.innerWidth - 460), top: pos[1] + 16 }}>
      <div className="flame-tip-name">{name}</div>
      {name !== raw && <div className="muted">{raw}</div>}
      {lines.map((l) => (
        <div key={l}>{l}</div>
      ))}
    </div>
  );
}

// FlameCanvas draws t zoomed to focus (setFocus zooms); named marks the
// functions that keep their colour (a search); inverted draws the root at
// the bottom. onFrame is told the name of a clicked frame. The canvas
// carries data-frames, the number of frames drawn.
export function FlameCanvas({ t, focus, setFocus, named, inverted = false, fmt, testid = 'flamegraph-canvas', onFrame }) {
  const [box, width] = useWidth(1000);
  const canvas = useRef(null);
  const [hover, setHover] = useTreeState(t, null);
  const cache = useMemo(() => colorCache(t), [t]);
  const view = { focus, width, inverted };

  useEffect(() => {
    const c = canvas.current;
    const dpr = window.devicePixelRatio || 1;
    const height = (t.maxDepth + 1) * ROW;
    c.width = Math.round(width * dpr);
    c.height = Math.round(height * dpr);
    c.style.width = `${width}px`;
    c.style.height = `${height}px`;
    const g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    const out = paint(g, t, { focus, width, inverted, named, cache });
    c.dataset.frames = String(out.drawn);
  }, [t, focus, width, inverted, named, cache]);

  const at = (e) => {
    const r = canvas.current.getBoundingClientRect();
    return nodeAt(t, view, e.clientX - r.left, e.clientY - r.top);
  };
  return (
    <div ref={box} className="flame-canvas">
      <canvas
        ref={canvas}
        data-testid={testid}
        onMouseMove={(e) => {
          const i = at(e);
          setHover(i >= 0 ? { i, pos: [e.clientX, e.clientY] } : null);
        }}
        onMouseLeave={() => setHover(null)}
        onClick={(e) => {
          const i = at(e);
          if (i < 0) return;
          setFocus(i === focus ? t.parent[i] >= 0 ? t.parent[i] : 0 : i);
          if (onFrame) onFrame(t.name[i]);
        }}
      />
      {hover && <Tip t={t} i={hover.i} fmt={fmt} pos={hover.pos} />}
    </div>
  );
}
