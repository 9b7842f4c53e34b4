// An application's SQL executions, as the History Server's SQL tab shows
// them: a row per execution; one picked shows its physical plan, as a
// graph of operators and as Spark prints it, and the stages it ran.
import React, { useState } from 'react';
import { Table } from './common';
import { Graph } from './Graph';
import { StageDAG } from './Jobs';
import { fmtMs } from './format';

// planGraph numbers a plan's operators depth first: nodes and the edges
// from each operator to the one that reads its output.
function planGraph(plan) {
  const nodes = [];
  const edges = [];
  const walk = (n, parent) => {
    const id = nodes.length;
    nodes.push({ id, label: n.name, sub: n.detail && n.detail !== n.name ? n.detail : '', title: n.detail || n.name });
    if (parent >= 0) edges.push([id, parent]);
    for (const c of n.children || []) walk(c, id);
  };
  if (plan) walk(plan, -1);
  return { nodes, edges };
}

// Execution is one SQL execution's plan and stages.
function Execution({ q, stages, stageHref }) {
  const { nodes, edges } = planGraph(q.plan);
  const ran = stages.filter((s) => s.sqlId === q.sqlId && s.status !== 'SKIPPED');
  return (
    <div data-testid="sql-detail">
      <h3>
        SQL {q.sqlId}: {q.description.slice(0, 120)}
      </h3>
      {q.error && <pre className="msg bad">{q.error}</pre>}
      {nodes.length > 0 ? (
        <div className="dag">
          <Graph nodes={nodes} edges={edges} testid="sql-plan" />
        </div>
      ) : (
        <p className="muted">The event log has no plan of this execution.</p>
      )}
      {q.planDescription && (
        <details>
          <summary>physical plan as Spark prints it</summary>
          <pre className="plan" data-testid="sql-plan-text">
            {q.planDescription}
          </pre>
        </details>
      )}
      <h4>Its stages</h4>
      {ran.length ? <StageDAG stages={ran} stageHref={stageHref} /> : <p className="muted">No stage ran for this execution.</p>}
    </div>
  );
}

// SQL lists the application's SQL executions; clicking one shows it.
export function SQL({ sql, stages, stageHref, initial = null }) {
  const [open, setOpen] = useState(initial);
  if (sql.length === 0) return <p className="muted">No SQL executions.</p>;
  const q = sql.find((x) => x.sqlId === open);
  return (
    <section>
      <h2>SQL executions</h2>
      {q && <Execution q={q} stages={stages} stageHref={stageHref} />}
      <p className="muted">Click an execution for its plan and its stages.</p>
      <Table
        testid="sql"
        rowKey={(x) => x.sqlId}
        selectedKey={open}
        onRowClick={(x) => setOpen(x.sqlId === open ? null : x.sqlId)}
        initialSort={{ key: 'sqlId', desc: false }}
        columns={[
          { key: 'sqlId', title: 'SQL', align: 'right' },
          { key: 'description', title: 'Description', render: (x) => <span title={x.description}>{x.description.slice(0, 100)}</span> },
          { key: 'durationMs', title: 'Duration', align: 'right', render: (x) => fmtMs(x.durationMs) },
          { key: 'jobIds', title: 'Jobs', sort: (x) => (x.jobIds || [])[0], render: (x) => (x.jobIds || []).join(', ') },
          { key: 'stages', title: 'Stages', align: 'right', sort: (x) => stages.filter((s) => s.sqlId === x.sqlId).length, render: (x) => stages.filter((s) => s.sqlId === x.sqlId && s.status !== 'SKIPPED').length },
          { key: 'error', title: 'Status', render: (x) => (x.error ? <span className="bad">failed</span> : x.endMs ? 'succeeded' : 'running') },
        ]}
        rows={sql}
      />
    </section>
  );
}
