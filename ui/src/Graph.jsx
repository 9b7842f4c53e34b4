// A directed graph laid out by dagre (layered, edges top to bottom) and
// drawn as SVG: the stage DAG of a job and the operators of a SQL plan.
import React, { useMemo, useState } from 'react';
import dagre from '@dagrejs/dagre';

const NODE_H = 34;
const LINE_H = 13;
const CHAR_W = 6.6;
const CLUSTER_PAD = 8;

// Graph draws nodes ({id, label, sub, lines, cluster, color, href, title,
// selected}) and edges ([from, to] ids); testid names the SVG for a reader
// of the page, which carries data-nodes, data-edges, data-clusters and
// data-scale. A node's lines (its metrics) go under its sub; nodes of one
// cluster ({id, label}: a WholeStageCodegen) are boxed together under its
// label. With zoom, a bar fits the graph to its box, or zooms in and out.
export function Graph({ nodes, edges, testid, rankdir = 'TB', zoom = false }) {
  const g = useMemo(() => {
    const gr = new dagre.graphlib.Graph();
    gr.setGraph({ rankdir, nodesep: 18, ranksep: 28, marginx: 8 + CLUSTER_PAD, marginy: 8 + CLUSTER_PAD + LINE_H });
    gr.setDefaultEdgeLabel(() => ({}));
    for (const n of nodes) {
      const chars = Math.max(n.label.length, (n.sub || '').length, ...(n.lines || []).map((l) => l.length));
      gr.setNode(String(n.id), { width: Math.min(320, 16 + chars * CHAR_W), height: NODE_H + LINE_H * (n.lines || []).length });
    }
    for (const [a, b] of edges) {
      if (gr.hasNode(String(a)) && gr.hasNode(String(b))) gr.setEdge(String(a), String(b));
    }
    dagre.layout(gr);
    return gr;
  }, [nodes, edges, rankdir]);
  const [scale, setScale] = useState(null); // null: fit
  const [box, setBox] = useState(0);
  const size = g.graph();
  const fit = box ? Math.min(1, box / size.width) : 1;
  const s = scale ?? fit;
  const byId = new Map(nodes.map((n) => [String(n.id), n]));
  const clusters = clusterBoxes(nodes, g);
  const svg = (
    <svg
      className="graph"
      data-testid={testid}
      data-nodes={nodes.length}
      data-edges={g.edgeCount()}
      data-clusters={clusters.length}
      data-scale={s.toFixed(3)}
      width={size.width * s}
      height={size.height * s}
      viewBox={`0 0 ${size.width} ${size.height}`}
    >
      <defs>
        <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
          <path d="M 0 0 L 10 5 L 0 10 z" fill="#888" />
        </marker>
      </defs>
      {clusters.map((c) => (
        <g key={c.id} className="graph-cluster" data-testid="graph-cluster">
          <title>{c.title || c.label}</title>
          <rect x={c.x} y={c.y} width={c.w} height={c.h} rx="6" fill="#f3f8ee" stroke="#9bbf7f" strokeDasharray="4 3" />
          <text x={c.x + 6} y={c.y + 11} className="graph-sub">
            {c.label}
          </text>
        </g>
      ))}
      {g.edges().map((e) => (
        <polyline
          key={`${e.v}-${e.w}`}
          points={g
            .edge(e)
            .points.map((p) => `${p.x},${p.y}`)
            .join(' ')}
          fill="none"
          stroke="#888"
          markerEnd="url(#arrow)"
        />
      ))}
      {g.nodes().map((id) => {
        const n = byId.get(id);
        const p = g.node(id);
        const body = (
          <g transform={`translate(${p.x - p.width / 2},${p.y - p.height / 2})`} data-testid="graph-node">
            <title>{n.title || n.label}</title>
            <rect width={p.width} height={p.height} rx="4" fill={n.color || '#e8eef6'} stroke={n.selected ? '#000' : '#9ab'} strokeWidth={n.selected ? 2 : 1} />
            <text x="6" y="14" className="graph-label">
              {clip(n.label, p.width)}
            </text>
            {n.sub && (
              <text x="6" y="27" className="graph-sub">
                {clip(n.sub, p.width)}
              </text>
            )}
            {(n.lines || []).map((l, i) => (
              <text key={i} x="6" y={27 + LINE_H * (i + 1)} className="graph-metric">
                {clip(l, p.width)}
              </text>
            ))}
          </g>
        );
        return n.href ? (
          <a key={id} href={n.href}>
            {body}
          </a>
        ) : (
          <g key={id}>{body}</g>
        );
      })}
    </svg>
  );
  if (!zoom) return svg;
  const step = (f) => setScale(Math.min(2, Math.max(0.1, s * f)));
  return (
    <div className="graph-zoom">
      <div className="row graph-zoom-bar">
        <button onClick={() => setScale(null)} disabled={scale === null} data-testid="graph-fit">
          fit
        </button>
        <button onClick={() => setScale(1)} data-testid="graph-actual">
          100 %
        </button>
        <button onClick={() => step(1.25)} data-testid="graph-zoom-in">
          +
        </button>
        <button onClick={() => step(0.8)} data-testid="graph-zoom-out">
          −
        </button>
        <span className="muted">{Math.round(s * 100)} %</span>
      </div>
      <div className="dag" ref={(el) => el && el.clientWidth !== box && setBox(el.clientWidth)}>
        {svg}
      </div>
    </div>
  );
}

// clusterBoxes returns the box around each cluster's nodes, laid out in
// g, with room for its label above them.
function clusterBoxes(nodes, g) {
  const boxes = new Map();
  for (const n of nodes) {
    if (!n.cluster || !g.hasNode(String(n.id))) continue;
    const p = g.node(String(n.id));
    const b = boxes.get(n.cluster.id) || { ...n.cluster, x0: Infinity, y0: Infinity, x1: -Infinity, y1: -Infinity };
    b.x0 = Math.min(b.x0, p.x - p.width / 2);
    b.y0 = Math.min(b.y0, p.y - p.height / 2);
    b.x1 = Math.max(b.x1, p.x + p.width / 2);
    b.y1 = Math.max(b.y1, p.y + p.height / 2);
    boxes.set(n.cluster.id, b);
  }
  return [...boxes.values()].map((b) => ({
    ...b,
    x: b.x0 - CLUSTER_PAD,
    y: b.y0 - CLUSTER_PAD - LINE_H,
    w: b.x1 - b.x0 + 2 * CLUSTER_PAD,
    h: b.y1 - b.y0 + 2 * CLUSTER_PAD + LINE_H,
  }));
}

// clip cuts text to what fits a node width pixels wide.
function clip(text, width) {
  const n = Math.floor((width - 12) / CHAR_W);
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}
