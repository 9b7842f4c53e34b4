// Recurring jobs and their runs: the jobs page (each job's runs with a
// sparkline of their duration and cost) and the compare page (a run
// against an earlier one: the change split over its causes, stage by
// stage).
import React from 'react';
import { getJSON } from '../api';
import { fmtMs, fmtTime, fmtPercent } from '../format';
import { href } from '../router';
import { useAsync, ErrorBox, Loading, Table } from '../common';

// Sparkline draws values as a line, the last point marked.
export function Sparkline({ values, width = 160, height = 28, testid, title }) {
  if (!values || values.length === 0) return null;
  const max = Math.max(...values, 1);
  const x = (i) => (values.length === 1 ? width / 2 : (i * (width - 4)) / (values.length - 1) + 2);
  const y = (v) => height - 2 - (v / max) * (height - 4);
  const pts = values.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
  const last = values.length - 1;
  return (
    <svg width={width} height={height} className="sparkline" data-testid={testid} data-points={values.length}>
      <title>{title}</title>
      <polyline points={pts} fill="none" stroke="currentColor" strokeWidth="1.5" />
      <circle cx={x(last)} cy={y(values[last])} r="2.5" />
    </svg>
  );
}

// runLabel names a run by its app id and start.
function runLabel(r) {
  return `${r.appId} (${fmtTime(r.startMs)})`;
}

export function JobsPage() {
  const { data, error } = useAsync(() => getJSON('/api/v1/jobs'), []);
  if (error) return <ErrorBox error={error} />;
  if (!data) return <Loading what="jobs" />;
  return (
    <div>
      <h1>Jobs</h1>
      <p className="muted">
        A job is the runs of one recurring application: those with the same <code>spark.sparkprof.job</code>, else the same
        name. Compare a run with the one before to see why it got slower or dearer.
      </p>
      {data.length === 0 ? (
        <div className="empty">No jobs yet: import event logs of applications.</div>
      ) : (
        <Table
          testid="jobs-list"
          rowKey={(j) => j.name}
          initialSort={{ key: 'last', desc: true }}
          columns={[
            { key: 'name', title: 'Job', render: (j) => j.name || '(unnamed)' },
            { key: 'runs', title: 'Runs', align: 'right', render: (j) => j.runs.length, sort: (j) => j.runs.length },
            {
              key: 'duration',
              title: 'Duration per run',
              sort: (j) => last(j).durationMs,
              render: (j) => <Sparkline values={j.runs.map((r) => r.durationMs)} testid="duration-sparkline" title={j.runs.map((r) => fmtMs(r.durationMs)).join(', ')} />,
            },
            {
              key: 'cost',
              title: 'Core-hours per run',
              sort: (j) => last(j).cost.coreHours,
              render: (j) => <Sparkline values={j.runs.map((r) => r.cost.coreHours)} testid="cost-sparkline" title={j.runs.map((r) => r.cost.coreHours).join(', ')} />,
            },
            { key: 'last', title: 'Last run', sort: (j) => last(j).startMs, render: (j) => last(j) && <a href={href(`/apps/${encodeURIComponent(last(j).appId)}`)}>{runLabel(last(j))}</a> },
            { key: 'lastMs', title: 'Its duration', align: 'right', sort: (j) => last(j).durationMs, render: (j) => fmtMs(last(j).durationMs) },
            {
              key: 'compare',
              title: '',
              sort: () => 0,
              render: (j) =>
                j.runs.length > 1 && (
                  <a href={href('/compare', { old: j.runs[j.runs.length - 2].appId, new: last(j).appId })} data-testid="compare-last">
                    compare with the run before
                  </a>
                ),
            },
          ]}
          rows={data}
        />
      )}
    </div>
  );
}

function last(j) {
  return j.runs[j.runs.length - 1];
}

// ratio prints a ratio of durations.
function ratio(r) {
  return r ? `${r.toFixed(2)}×` : '–';
}

function signed(ms) {
  return ms < 0 ? `−${fmtMs(-ms)}` : `+${fmtMs(ms)}`;
}

// causeText is a cause's evidence and, for a code cause, its functions.
function causeText(c) {
  const fns = (c.functions || []).slice(0, 3).map((f) => `${f.name} ${fmtPercent(f.oldShare)} → ${fmtPercent(f.newShare)} of its CPU`);
  return [c.evidence, ...fns].join('; ');
}

function Causes({ causes, testid }) {
  return (
    <Table
      testid={testid}
      rowKey={(c) => c.kind}
      initialSort={{ key: 'changeMs', desc: true }}
      columns={[
        { key: 'changeMs', title: 'Change', align: 'right', sort: (c) => Math.abs(c.changeMs), render: (c) => signed(c.changeMs) },
        { key: 'share', title: 'Share', align: 'right', render: (c) => fmtPercent(c.share) },
        { key: 'kind', title: 'Cause', render: (c) => <b data-kind={c.kind}>{c.kind}</b> },
        { key: 'evidence', title: 'Evidence', render: (c) => causeText(c) },
      ]}
      rows={causes}
    />
  );
}

export function ComparePage({ params }) {
  const { data, error } = useAsync(
    () => getJSON('/api/v1/compare', { old: params.old, new: params.new, oldAttempt: params.oldAttempt, newAttempt: params.newAttempt }),
    [params.old, params.new, params.oldAttempt, params.newAttempt],
  );
  if (!params.new) return <ErrorBox error={new Error('no run to compare: open a job on the Jobs page, or an app, and compare from there')} />;
  if (error) return <ErrorBox error={error} />;
  if (!data) return <Loading what="comparison" />;
  const appLink = (r) => <a href={href(`/apps/${encodeURIComponent(r.appId)}`)}>{runLabel(r)}</a>;
  return (
    <div>
      <h1 data-testid="compare-title">
        {data.job}: {fmtMs(data.old.durationMs)} → {fmtMs(data.new.durationMs)} ({ratio(data.durationRatio)}, {signed(data.changeMs)})
      </h1>
      <Table
        testid="compare-runs"
        rowKey={(r) => r.side}
        columns={[
          { key: 'side', title: '', sort: (r) => (r.side === 'old' ? 0 : 1) },
          { key: 'app', title: 'Run', render: (r) => appLink(r) },
          { key: 'durationMs', title: 'Duration', align: 'right', render: (r) => fmtMs(r.durationMs) },
          { key: 'executors', title: 'Executors', align: 'right' },
          { key: 'tasks', title: 'Tasks', align: 'right' },
          { key: 'coreHours', title: 'Core-hours', align: 'right', render: (r) => r.cost.coreHours },
          { key: 'gibHours', title: 'Memory GiB-hours', align: 'right', render: (r) => r.cost.memoryGiBHours },
        ]}
        rows={[
          { side: 'old', ...data.old },
          { side: 'new', ...data.new },
        ]}
      />
      <h2>Why</h2>
      <Causes causes={data.causes} testid="compare-causes" />
      <h2>Stages</h2>
      <Table
        testid="compare-stages"
        rowKey={(s) => `${s.old?.id ?? '-'}:${s.new?.id ?? '-'}`}
        initialSort={{ key: 'changeMs', desc: true }}
        columns={[
          { key: 'old', title: 'Old', align: 'right', sort: (s) => (s.old ? s.old.id : -1), render: (s) => (s.old ? s.old.id : '–') },
          { key: 'new', title: 'New', align: 'right', sort: (s) => (s.new ? s.new.id : -1), render: (s) => (s.new ? s.new.id : '–') },
          {
            key: 'confidence',
            title: 'Match',
            sort: (s) => s.confidence,
            render: (s) => (!s.old ? 'new' : !s.new ? 'gone' : <span title={s.matchedBy}>{s.confidence.toFixed(2)}</span>),
          },
          { key: 'name', title: 'Stage' },
          { key: 'dur', title: 'Duration', sort: (s) => s.newMetrics?.durationMs ?? 0, render: (s) => `${fmtMs(s.oldMetrics?.durationMs)} → ${fmtMs(s.newMetrics?.durationMs)}` },
          { key: 'durationRatio', title: 'Ratio', align: 'right', render: (s) => ratio(s.durationRatio) },
          { key: 'changeMs', title: 'Change', align: 'right', render: (s) => signed(s.changeMs) },
          {
            key: 'cause',
            title: 'Main cause',
            sort: (s) => s.causes[0]?.kind ?? '',
            render: (s) => (s.causes.length > 0 ? <span title={causeText(s.causes[0])}>{`${s.causes[0].kind} (${fmtPercent(s.causes[0].share)})`}</span> : ''),
          },
        ]}
        rows={data.stages}
      />
      {(data.config || []).length > 0 && (
        <>
          <h2>Spark properties that differ</h2>
          <Table
            testid="compare-config"
            rowKey={(c) => c.name}
            columns={[
              { key: 'name', title: 'Property', render: (c) => <code>{c.name}</code> },
              { key: 'old', title: 'Old', render: (c) => c.old || '(unset)' },
              { key: 'new', title: 'New', render: (c) => c.new || '(unset)' },
            ]}
            rows={data.config}
          />
        </>
      )}
      <p className="muted">
        Each stage's change is split over its causes by writing its time as a product (data × CPU per byte × time off the CPU
        × GC × 1/slots × unfilled slots × imbalance); each cause gets the part of the change its factor's ratio explains, so
        the parts add up to the change. Stages are matched by call site, operators and place in the DAG, not by id.
      </p>
    </div>
  );
}
