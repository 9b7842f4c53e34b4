// The offline report of one application: its facts, findings, timeline,
// stages, executors, SQL executions and container log findings, drawn by
// the same components as the app page of the web UI.
import React, { useMemo, useState } from 'react';
import { Timeline } from '../Timeline';
import { AppFacts, Findings, LogFindings, Stages, Executors, stragglerTasks } from '../AppReport';
import { Table } from '../common';
import { Recommendations } from '../Recommendations';
import { fmtMs } from '../format';

// statuses are the task states the compact task encoding numbers.
const statuses = ['SUCCESS', 'FAILED', 'KILLED', 'RUNNING'];

// decode turns the report's data as report.WriteHTML embeds it (the
// analysis report's JSON, where an empty list may be null) into the report
// the components draw. Its tasks are compact: [id, stage, partition, lane,
// launch, finish, status], with lane an index into lanes (executor ids),
// times in ms from origin (finish -1 while running) and status an index
// into statuses.
export function decode(d) {
  const lists = {};
  for (const k of ['executors', 'jobs', 'stages', 'sql', 'findings', 'metrics']) lists[k] = d[k] || [];
  const tasks = d.tasks.map(([taskId, stageId, partition, lane, launch, finish, status]) => ({
    taskId,
    stageId,
    partition,
    executorId: d.lanes[lane],
    launchMs: d.origin + launch,
    finishMs: finish < 0 ? 0 : d.origin + finish,
    status: statuses[status],
  }));
  return { ...d, ...lists, tasks };
}

// SQL lists the application's SQL executions.
function SQL({ sql }) {
  if (sql.length === 0) return null;
  return (
    <section>
      <h2>SQL executions</h2>
      <Table
        testid="sql"
        initialSort={{ key: 'sqlId', desc: false }}
        columns={[
          { key: 'sqlId', title: 'SQL', align: 'right' },
          { key: 'description', title: 'Description', render: (q) => <span title={q.description}>{q.description.slice(0, 100)}</span> },
          { key: 'durationMs', title: 'Duration', align: 'right', render: (q) => fmtMs(q.durationMs) },
          { key: 'jobIds', title: 'Jobs', sort: (q) => (q.jobIds || [])[0], render: (q) => (q.jobIds || []).join(', ') },
          { key: 'error', title: 'Error', render: (q) => (q.error ? <pre className="msg">{q.error}</pre> : null) },
        ]}
        rows={sql}
      />
    </section>
  );
}

// ReportPage is the whole report; clicking a stage (in the findings, the
// timeline or the stage table) selects it on the timeline and the table.
export function ReportPage({ rep }) {
  const [stage, setStage] = useState(null);
  const stragglers = useMemo(() => stragglerTasks(rep.findings), [rep]);
  const select = (s) => setStage((cur) => (cur === s ? null : s));
  const a = rep.app;
  return (
    <>
      <header>
        <span className="brand">sparkprof</span>
        <span>offline report</span>
      </header>
      <main>
        <h1 data-testid="app-title">
          {a.name || '(unnamed)'} <code className="muted">{a.id}</code>
        </h1>
        <AppFacts app={a} stages={rep.stages} />
        <section>
          <h2>Findings</h2>
          <Findings findings={rep.findings} onStage={select} />
        </section>
        <Recommendations recommendations={rep.recommendations} appId={a.id} offline />
        <section>
          <h2>Timeline</h2>
          {rep.truncatedTasks > 0 && (
            <p className="muted" data-testid="tasks-truncated">
              The timeline draws the {rep.tasks.length.toLocaleString('en')} longest tasks; the {rep.truncatedTasks.toLocaleString('en')} others are left out to keep the report small.
            </p>
          )}
          <Timeline rep={rep} selectedStage={stage} onStage={select} stragglers={stragglers} />
        </section>
        <Stages stages={rep.stages} findings={rep.findings} selectedStage={stage} onStage={select} />
        <Executors executors={rep.executors} />
        <SQL sql={rep.sql} />
        <LogFindings findings={rep.findings} />
      </main>
    </>
  );
}
