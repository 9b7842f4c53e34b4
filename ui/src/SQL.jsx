// An application's SQL executions, as the History Server's SQL tab shows
// them: a row per execution; one picked shows its physical plan, as a
// graph of operators and as Spark prints it, and the stages it ran.
import React, { useState } from 'react';
import { Table } from './common';
import { Graph } from './Graph';
import { StageDAG } from './Jobs';
import { fmtMs } from './format';
import { hasStats, maxAt, sqlMetricText, sqlValue } from './sqlMetrics';

// metricValue writes a SQL metric as the History Server's SQL page does:
// its total, and for a size, time or average of several tasks the min,
// med and max over them and the task of the max.
export function metricValue(m) {
  return sqlMetricText(m).text;
}

// metricLine is a metric with its name, and the History Server's header
// of its figures when it has one.
function metricLine(m) {
  const { header, text } = sqlMetricText(m);
  return `${m.name}${header ? ` ${header}` : ''}: ${text}`;
}

// maxLines is how many of an operator's metrics its node shows; all are
// in its tooltip and the table under the graph.
const maxLines = 4;

// planGraph numbers a plan's operators depth first: nodes and the edges
// from each operator to the one that reads its output. A WholeStageCodegen
// is drawn as a box (cluster) around the operators it compiled into one
// function, down to its InputAdapters, as the History Server draws it.
function planGraph(plan) {
  const nodes = [];
  const edges = [];
  const ops = []; // [node, operator] of those with metrics, for the table
  let codegens = 0;
  const walk = (n, parent, cluster) => {
    if (n.name.startsWith('WholeStageCodegen')) {
      const c = { id: `wscg-${codegens++}`, label: metricsTitle(n.name, n.metrics, 1), title: metricsTitle(n.name, n.metrics, 99) };
      if (n.metrics?.some((m) => m.known)) ops.push([null, n]);
      for (const ch of n.children || []) walk(ch, parent, c);
      return;
    }
    const id = nodes.length;
    const known = (n.metrics || []).filter((m) => m.known);
    nodes.push({
      id,
      label: n.name,
      sub: n.detail && n.detail !== n.name ? n.detail : '',
      lines: known
        .filter((m) => m.total > 0)
        .slice(0, maxLines)
        .map((m) => `${m.name}: ${metricValue(m)}`),
      title: [`${n.detail || n.name}${n.nodeId >= 0 ? ` (${n.nodeId})` : ''}`, ...(n.metrics || []).map(metricLine)].join('\n'),
      cluster: n.name === 'InputAdapter' ? null : cluster,
    });
    if (known.length) ops.push([id, n]);
    if (parent >= 0) edges.push([id, parent]);
    for (const c of n.children || []) walk(c, id, n.name === 'InputAdapter' ? null : cluster);
  };
  if (plan) walk(plan, -1, null);
  return { nodes, edges, ops };
}

// metricsTitle is a name with up to n of its known metrics.
function metricsTitle(name, metrics, n) {
  const known = (metrics || []).filter((m) => m.known).slice(0, n);
  return known.length ? `${name} — ${known.map(n > 1 ? metricLine : (m) => `${m.name}: ${metricValue(m)}`).join(', ')}` : name;
}

// OperatorMetrics lists every operator's SQL metrics, in plan order, as
// the History Server's SQL page gives them: the total, and the min, med
// and max over the tasks and the task of the max. An operator is named by
// its id in the History Server's plan graph.
function OperatorMetrics({ ops }) {
  if (ops.length === 0) return <p className="muted">No SQL metrics: no task of this execution reported them.</p>;
  const stat = (m, k) => (hasStats(m) ? sqlValue(m.type, m[k]) : '');
  // An average of several tasks has no total.
  const total = (m) => (!m.known ? 'not reported' : hasStats(m) && m.type === 'average' ? '' : sqlValue(m.type, m.total));
  return (
    <details open>
      <summary>SQL metrics of each operator ({ops.length} operators)</summary>
      <table className="grid" data-testid="sql-metrics">
        <thead>
          <tr>
            <th>Operator</th>
            <th>Metric</th>
            <th className="num">Total</th>
            <th className="num">Min</th>
            <th className="num">Median</th>
            <th className="num">Max</th>
            <th>Max at (stage.attempt: task)</th>
          </tr>
        </thead>
        <tbody>
          {ops.flatMap(([id, n]) =>
            n.metrics.map((m, i) => (
              <tr key={`${id}-${n.name}-${m.name}`} title={metricLine(m)}>
                <td>{i === 0 ? `${n.name}${n.nodeId >= 0 ? ` (${n.nodeId})` : ''}` : ''}</td>
                <td>{m.name}</td>
                <td className="num">{total(m)}</td>
                <td className="num">{stat(m, 'min')}</td>
                <td className="num">{stat(m, 'med')}</td>
                <td className="num">{stat(m, 'max')}</td>
                <td>{hasStats(m) ? maxAt(m) : ''}</td>
              </tr>
            )),
          )}
        </tbody>
      </table>
    </details>
  );
}

// Execution is one SQL execution's plan and stages.
function Execution({ q, stages, stageHref }) {
  const { nodes, edges, ops } = planGraph(q.plan);
  const ran = stages.filter((s) => s.sqlId === q.sqlId && s.status !== 'SKIPPED');
  return (
    <div data-testid="sql-detail">
      <h3>
        SQL {q.sqlId}: {q.description.slice(0, 120)}
      </h3>
      {q.error && <pre className="msg bad">{q.error}</pre>}
      {nodes.length > 0 ? (
        <>
          <Graph nodes={nodes} edges={edges} testid="sql-plan" zoom />
          <OperatorMetrics ops={ops} />
        </>
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

// SQL lists the application's SQL executions; clicking one shows it, and
// onPick is told it (the page keeps it in its link).
export function SQL({ sql, stages, stageHref, initial = null, onPick }) {
  const [own, setOwn] = useState(initial);
  const open = onPick ? initial : own;
  const setOpen = onPick || setOwn;
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
