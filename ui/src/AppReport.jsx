// The parts of an application's report that the app page and the offline
// report both show: its facts, findings, stages, executors and what its
// container logs said.
import React, { useState } from 'react';
import { findingStages } from './api';
import { fmtMs, fmtBytes, fmtTime, plural, stageTasks } from './format';
import { Table, Severity } from './common';
import { Evidence } from './Evidence';
import { readableText } from './names';

// logKinds are the findings LogFindings shows as tables of their own.
const logKinds = ['errors', 'log-chunks'];

// stragglerTasks returns the ids of the tasks a straggler finding names.
export function stragglerTasks(findings) {
  return new Set((findings || []).filter((f) => f.kind === 'straggler' && f.taskId !== undefined).map((f) => f.taskId));
}

// AppFacts is the line of facts under an application's title; live is
// shown after the run time of an app without an end, children last.
export function AppFacts({ app: a, jobs, stages, live, children }) {
  const skipped = stages.filter((s) => s.status === 'SKIPPED').length;
  // Jobs whose JobStart the log lacks are listed too, from their JobEnd.
  const unstarted = jobs.filter((j) => !j.submitMs).length;
  return (
    <div className="facts" data-testid="app-facts">
      <span>Spark {a.sparkVersion || '?'}</span>
      <span>{a.master}</span>
      <span>{a.user}</span>
      <span>started {fmtTime(a.startMs)}</span>
      <span>{a.endMs ? `ran ${fmtMs(a.durationMs)}` : '● live / no end event'}</span>
      {!a.endMs && live && <span>{live}</span>}
      <span>
        <span data-testid="app-job-count">
          {plural(jobs.length, 'job')}
          {unstarted ? ` (${unstarted} without a JobStart)` : ''}
        </span>{' '}
        · {plural(stages.length - skipped, 'stage attempt')}
        {skipped > 0 ? ` · ${plural(skipped, 'stage')} skipped` : ''} · {plural(a.taskCount, 'task')} ({a.failedTaskCount} not successful) ·{' '}
        {a.executorCount === 0 && a.taskCount > 0 ? 'tasks ran on the driver (local mode)' : plural(a.executorCount, 'executor')}
      </span>
      {children}
    </div>
  );
}

// Findings lists the findings but those of container logs, each with its
// stage's other findings, its suggestion and evidence; a finding of a
// stage selects the stage. A regression links to compareHref(old, new),
// the comparison of the runs, where there is one.
export function Findings({ findings, onStage, taskFlameHref, compareHref }) {
  const shown = findings.filter((f) => !logKinds.includes(f.kind));
  if (shown.length === 0) return <p className="muted">No findings: nothing stands out.</p>;
  return (
    <ul className="findings" data-testid="findings">
      {shown.map((f, i) => (
        <li key={i}>
          <Severity level={f.severity} /> <span className="kind">{f.kind}</span>{' '}
          {f.stageId !== undefined && f.stageId !== null ? (
            <a onClick={() => onStage(f.stageId)} className="clickable">
              {readableText(f.message)}
            </a>
          ) : (
            readableText(f.message)
          )}
          {(f.evidence?.also || []).map((a) => (
            <div key={a} className="also" data-testid="finding-also">
              also: {a}
            </div>
          ))}
          <div className="suggestion">
            {f.suggestion}
            {taskFlameHref && f.taskId !== undefined && f.taskId !== null && (
              <>
                {' '}
                <a href={taskFlameHref(f.taskId)} data-testid="task-flame">
                  the flame graph of task {f.taskId}
                </a>
              </>
            )}
          </div>
          {f.kind === 'regression' && compareHref && f.evidence ? (
            <p data-testid="regression">
              <a href={compareHref(f.evidence.old.appId, f.evidence.new.appId)}>compare with {f.evidence.old.appId}, stage by stage</a>
            </p>
          ) : f.kind === 'warnings' ? (
            <ul className="warnings" data-testid="warnings">
              {(f.evidence?.warnings || []).map((w) => (
                <li key={w}>{w}</li>
              ))}
            </ul>
          ) : (
            <details>
              <summary>evidence</summary>
              <Evidence evidence={f.evidence} skip={['also']} />
            </details>
          )}
        </li>
      ))}
    </ul>
  );
}

// LogFindings shows the errors and the repeated log chunks found in
// container logs, if any.
export function LogFindings({ findings }) {
  const errors = findings.find((f) => f.kind === 'errors');
  const chunks = findings.find((f) => f.kind === 'log-chunks');
  if (!errors && !chunks) return null;
  return (
    <section>
      <h2>Container logs</h2>
      {errors && (
        <>
          <h3>Errors and warnings (deduplicated, newest first)</h3>
          <Table
            testid="log-errors"
            initialSort={{ key: 'last', desc: true }}
            columns={[
              { key: 'level', title: 'Level' },
              { key: 'count', title: 'Count', align: 'right' },
              { key: 'last', title: 'Last', render: (e) => e.last },
              { key: 'logger', title: 'Logger' },
              { key: 'message', title: 'Message', render: (e) => <pre className="msg">{e.message}</pre> },
            ]}
            rows={errors.evidence.errors || []}
          />
        </>
      )}
      {chunks && (
        <>
          <h3>Top log chunks (repeated runs of lines, by lines covered)</h3>
          <Table
            testid="log-chunks"
            initialSort={{ key: 'lines', desc: true }}
            columns={[
              { key: 'lines', title: 'Lines', align: 'right' },
              { key: 'runs', title: 'Runs', align: 'right' },
              { key: 'pattern', title: 'Pattern', render: (c) => <pre className="msg">{c.pattern}</pre> },
            ]}
            rows={chunks.evidence.chunks || []}
          />
        </>
      )}
    </section>
  );
}

// stageColumns are the stage table's columns; verdict maps a stage to its
// first finding, stageHref (when there are stage pages) a stage to its page.
function stageColumns(verdict, stageHref) {
  const bytes = (key, title, value) => ({ key, title, align: 'right', sort: value, render: (s) => (s.noMetrics ? unknownMetric : fmtBytes(value(s))) });
  const ms = (key, title, value) => ({ key, title, align: 'right', sort: value, render: (s) => (s.noMetrics ? unknownMetric : fmtMs(value(s))) });
  return [
    {
      key: 'stageId',
      title: 'Stage',
      align: 'right',
      render: (s) => {
        const id = `${s.stageId}${s.attempt ? `.${s.attempt}` : ''}`;
        return stageHref && s.status !== 'SKIPPED' ? (
          <a href={stageHref(s)} onClick={(e) => e.stopPropagation()} title="the stage's page: its tasks, their quantiles, its flame graph">
            {id}
          </a>
        ) : (
          id
        );
      },
    },
    { key: 'name', title: 'Name', render: (s) => <span title={s.name}>{s.name.slice(0, 60)}</span> },
    { key: 'status', title: 'Status' },
    { key: 'taskCount', title: 'Tasks', align: 'right', sort: (s) => stageTasks(s).count, render: (s) => stageTasks(s).text.replace(/ tasks?/, '') },
    { key: 'durationMs', title: 'Duration', align: 'right', render: (s) => fmtMs(s.durationMs) },
    ms('runTime', 'Run time', (s) => s.metrics.executorRunTime),
    bytes('input', 'Input', (s) => s.metrics.inputBytes),
    bytes('shuffleRead', 'Shuffle read', (s) => s.metrics.shuffleRemoteBytesRead + s.metrics.shuffleLocalBytesRead),
    bytes('shuffleWrite', 'Shuffle write', (s) => s.metrics.shuffleWriteBytes),
    bytes('spill', 'Spill (disk)', (s) => s.metrics.diskBytesSpilled),
    ms('gc', 'GC', (s) => s.metrics.jvmGcTime),
    {
      key: 'verdict',
      title: 'Finding',
      sort: (s) => (verdict.get(s.stageId) ? verdict.get(s.stageId).kind : ''),
      render: (s) => {
        const f = verdict.get(s.stageId);
        return f ? (
          <span title={f.message}>
            <Severity level={f.severity} /> {f.kind}
          </span>
        ) : null;
      },
    },
  ];
}

// Stages is the stage table: the stages that ran in the window (all of
// them without one), and those an ended job listed and never ran on
// request, apart as Spark's UI keeps them. Clicking a stage selects it; its
// id links to its page, given stageHref.
export function Stages({ stages: all, findings, window: win, selectedStage, onStage, stageHref }) {
  const [showSkipped, setShowSkipped] = useState(false);
  const skipped = all.filter((s) => s.status === 'SKIPPED').length;
  const overlaps = (s0, s1) => !win || ((s0 || 0) <= win[1] && (s1 || Infinity) >= win[0]);
  const stages = all.filter((s) => (showSkipped || s.status !== 'SKIPPED') && overlaps(s.submitMs || s.firstTaskLaunchMs, s.completeMs));
  const verdict = new Map();
  for (const f of findings) {
    for (const id of findingStages(f)) if (!verdict.has(id)) verdict.set(id, f);
  }
  return (
    <section>
      <h2>Stages{win ? ' in the window' : ''}</h2>
      {skipped > 0 && (
        <label className="muted">
          <input type="checkbox" checked={showSkipped} onChange={(e) => setShowSkipped(e.target.checked)} data-testid="show-skipped" /> show the{' '}
          {skipped} skipped {skipped === 1 ? 'stage' : 'stages'} (listed by a job, never run: their output was there already)
        </label>
      )}
      <Table
        testid="stages"
        rowKey={(s) => s.stageId}
        selectedKey={selectedStage}
        onRowClick={(s) => onStage(s.stageId)}
        initialSort={{ key: 'stageId', desc: false }}
        columns={stageColumns(verdict, stageHref)}
        rows={stages}
      />
    </section>
  );
}

// unknownMetric stands for a metric that tasks from a container log do not
// carry: unknown, not zero.
const unknownMetric = (
  <span className="muted" title="no task metrics: a container log gives only the tasks' times">
    unknown
  </span>
);

// Executors is the executor table, the driver first and then by number.
export function Executors({ executors }) {
  return (
    <section>
      <h2>Executors</h2>
      <Table
        testid="executors"
        initialSort={{ key: 'id', desc: false }}
        columns={[
          { key: 'id', title: 'Executor', sort: (e) => (e.id === 'driver' ? -1 : Number.isNaN(Number(e.id)) ? e.id : Number(e.id)) },
          { key: 'host', title: 'Host' },
          { key: 'cores', title: 'Cores', align: 'right', render: (e) => (e.noMetrics || !e.cores ? unknownMetric : e.cores) },
          { key: 'addedMs', title: 'Added', render: (e) => fmtTime(e.addedMs) },
          { key: 'removedMs', title: 'Removed', render: (e) => fmtTime(e.removedMs) },
          { key: 'removalReason', title: 'Removal reason' },
          { key: 'totalTasks', title: 'Tasks', align: 'right', render: (e) => `${e.totalTasks}${e.failedTasks ? ` (${e.failedTasks} failed)` : ''}` },
          { key: 'totalDurationMs', title: 'Task time', align: 'right', render: (e) => fmtMs(e.totalDurationMs) },
          { key: 'totalGCTimeMs', title: 'GC', align: 'right', render: (e) => (e.noMetrics ? unknownMetric : fmtMs(e.totalGCTimeMs)) },
          { key: 'totalShuffleRead', title: 'Shuffle read', align: 'right', render: (e) => (e.noMetrics ? unknownMetric : fmtBytes(e.totalShuffleRead)) },
        ]}
        rows={executors}
      />
    </section>
  );
}
