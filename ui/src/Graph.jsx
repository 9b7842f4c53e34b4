// A directed graph laid out by dagre (layered, edges top to bottom) and
// drawn as SVG: the stage DAG of a job and the operators of a SQL plan.
import React, { useMemo } from 'react';
import dagre from '@dagrejs/dagre';

const NODE_H = 34;
const CHAR_W = 6.6;

// Graph draws nodes ({id, label, sub, color, href, title, selected}) and
// edges ([from, to] ids); testid names the SVG for a reader of the page,
// which carries data-nodes and data-edges.
export function Graph({ nodes, edges, testid, rankdir = 'TB' }) {
  const g = useMemo(() => {
    const gr = new dagre.graphlib.Graph();
    gr.setGraph({ rankdir, nodesep: 18, ranksep: 28, marginx: 8, marginy: 8 });
    gr.setDefaultEdgeLabel(() => ({}));
    for (const n of nodes) {
      const chars = Math.max(n.label.length, (n.sub || '').length);
      gr.setNode(String(n.id), { width: Math.min(320, 16 + chars * CHAR_W), height: NODE_H });
    }
    for (const [a, b] of edges) {
      if (gr.hasNode(String(a)) && gr.hasNode(String(b))) gr.setEdge(String(a), String(b));
    }
    dagre.layout(gr);
    return gr;
  }, [nodes, edges, rankdir]);
  const size = g.graph();
  const byId = new Map(nodes.map((n) => [String(n.id), n]));
  return (
    <svg className="graph" data-testid={testid} data-nodes={nodes.length} data-edges={g.edgeCount()} width={size.width} height={size.height}>
      <defs>
        <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
          <path d="M 0 0 L 10 5 L 0 10 z" fill="#888" />
        </marker>
      </defs>
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
          <g transform={`translate(${p.x - p.width / 2},${p.y - p.height / 2})`}>
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
}

// clip cuts text to what fits a node width pixels wide.
function clip(text, width) {
  const n = Math.floor((width - 12) / CHAR_W);
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}
