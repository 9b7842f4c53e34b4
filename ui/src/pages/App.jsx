// One application: timeline with metric overlays, findings, stages,
// executors, errors and log chunks, and the flame graph of what is
// selected (whole app, a stage, a brushed time window).
import React, { useCallback, useMemo, useState, useRef } from 'react';
import { getJSON, selector, findingStages, minOf, maxOf } from '../api';
import { fmtMs, fmtBytes, fmtTime } from '../format';
import { href } from '../router';
import { useAsync, ErrorBox, Loading, Table, Severity, RefreshControls } from '../common';
import { Timeline } from '../Timeline';
import { MetricChart, chartsOf } from '../Metrics';
import { FlameView } from '../Flame';


// useWidth tracks the width of the element the returned callback ref is
// attached to (it may appear after the first render).
function useWidth() {
  const [w, setW] = useState(900);
  const observer = useRef(null);
  const ref = useCallback((el) => {
    observer.current?.disconnect();
    if (!el) return;
    observer.current = new ResizeObserver(() => setW(Math.max(400, el.clientWidth)));
    observer.current.observe(el);
  }, []);
  return [ref, w];
}

function Findings({ findings, onStage }) {
  const shown = findings.filter((f) => f.kind !== 'errors' && f.kind !== 'logChunks');
  if (shown.length === 0) return <p className="muted">No findings: nothing stands out.</p>;
  return (
    <ul className="findings" data-testid="findings">
      {shown.map((f, i) => (
        <li key={i}>
          <Severity level={f.severity} /> <span className="kind">{f.kind}</span>{' '}
          {f.stageId !== undefined && f.stageId !== null ? (
            <a onClick={() => onStage(f.stageId)} className="clickable">
              {f.message}
            </a>
          ) : (
            f.message
          )}
          {(f.evidence?.also || []).map((a) => (
            <div key={a} className="also" data-testid="finding-also">
              also: {a}
            </div>
          ))}
          <div className="suggestion">{f.suggestion}</div>
          <details>
            <summary>evidence</summary>
            <pre>{JSON.stringify(f.evidence, null, 2)}</pre>
          </details>
        </li>
      ))}
    </ul>
  );
}

function LogFindings({ findings }) {
  const errors = findings.find((f) => f.kind === 'errors');
  const chunks = findings.find((f) => f.kind === 'logChunks');
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

// OtherRuns offers the diff of this app's profile against another run of
// the same application (same name) that has profile samples: "why is
// today's run slower than yesterday's?".
function OtherRuns({ app, appIds }) {
  const { data: apps } = useAsync(() => getJSON('/api/v1/apps'), []);
  const runs = (apps || []).filter((o) => o.name === app.name && o.id !== app.id && (appIds || []).includes(o.id));
  if (runs.length === 0) return null;
  runs.sort((x, y) => (y.startMs || 0) - (x.startMs || 0));
  const diff = (other) => href('/diff', { base: selector({ spark_app_id: other }), next: selector({ spark_app_id: app.id }) });
  return (
    <p data-testid="other-runs">
      Compare with another run of {app.name || 'this app'}:{' '}
      {runs.slice(0, 10).map((o, i) => (
        <span key={o.id}>
          {i > 0 && ' · '}
          <a href={diff(o.id)}>
            {o.id} ({fmtTime(o.startMs)}
            {o.durationMs ? `, ${fmtMs(o.durationMs)}` : ''})
          </a>
        </span>
      ))}
    </p>
  );
}

export function AppPage({ id, params, setParams }) {
  const { data: rep, error } = useAsync(() => getJSON(`/api/v1/apps/${encodeURIComponent(id)}`, { tasks: 'brief' }), [id]);
  const { data: appIds } = useAsync(() => getJSON('/api/v1/label-values', { name: 'spark_app_id' }), []);
  const [chartsRef, width] = useWidth();
  const { data: samples } = useAsync(
    () =>
      rep && (appIds || []).includes(rep.app.id)
        ? getJSON('/api/v1/series', { query: selector({ spark_app_id: rep.app.id }), by: 'spark_executor_id', step: `${Math.max(1, Math.round(((rep.app.durationMs || 60000) / 200) / 1000))}s` })
        : Promise.resolve(null),
    [rep, appIds],
  );
  const stage = params.stage !== undefined && params.stage !== '' ? Number(params.stage) : null;
  const win = params.from && params.until ? [Number(params.from), Number(params.until)] : null;
  const stragglers = useMemo(
    () => new Set((rep?.findings || []).filter((f) => f.kind === 'straggler' && f.taskId !== undefined).map((f) => f.taskId)),
    [rep],
  );
  // Stages an ended job listed and never ran: apart, as Spark's UI keeps them.
  const [showSkipped, setShowSkipped] = useState(false);
  const markers = useMemo(() => {
    const m = [];
    for (const s of rep?.stages || []) {
      if (s.submitMs) m.push(s.submitMs);
      if (s.completeMs) m.push(s.completeMs);
    }
    return m;
  }, [rep]);
  if (error) return <ErrorBox error={error} />;
  if (!rep) return <Loading what="application" />;
  const a = rep.app;
  const skipped = rep.stages.filter((s) => s.status === 'SKIPPED').length;
  const t0 = a.startMs || minOf(rep.tasks, (t) => t.launchMs);
  const t1 = maxOf(rep.tasks, (t) => t.finishMs || 0, a.endMs || 0);
  const range = win || [t0, t1];
  const overlaps = (s0, s1) => !win || ((s0 || 0) <= win[1] && (s1 || Infinity) >= win[0]);
  const stages = rep.stages.filter(
    (s) => (showSkipped || s.status !== 'SKIPPED') && overlaps(s.submitMs || s.firstTaskLaunchMs, s.completeMs),
  );
  const verdict = new Map();
  for (const f of rep.findings) {
    for (const id of findingStages(f)) if (!verdict.has(id)) verdict.set(id, f);
  }
  const hasProfiles = (appIds || []).includes(a.id);
  const sel = {
    // The server joins the app's samples to its task windows, so the stage
    // label selects a stage even when thread names carry only the task id.
    query: selector({ spark_app_id: a.id, spark_stage_id: stage === null ? undefined : String(stage) }),
    type: params.type,
    from: win ? win[0] : undefined,
    until: win ? win[1] : undefined,
  };
  const selectStage = (s) => setParams({ ...params, stage: s === stage ? '' : s });
  return (
    <div>
      <h1 data-testid="app-title">
        {a.name || '(unnamed)'} <code className="muted">{a.id}</code>
      </h1>
      <div className="facts">
        <span>Spark {a.sparkVersion || '?'}</span>
        <span>{a.master}</span>
        <span>{a.user}</span>
        <span>started {fmtTime(a.startMs)}</span>
        <span>{a.endMs ? `ran ${fmtMs(a.durationMs)}` : '● live / no end event'}</span>
        {!a.endMs && (
          <span>
            <RefreshControls />
          </span>
        )}
        <span>
          {a.jobCount} jobs · {rep.stages.length - skipped} stage attempts
          {skipped > 0 ? ` · ${skipped} stages skipped` : ''} · {a.taskCount} tasks ({a.failedTaskCount} not successful) ·{' '}
          {a.executorCount === 0 && a.taskCount > 0 ? 'tasks ran on the driver (local mode)' : `${a.executorCount} executors`}
        </span>
        <a href={`/apps/${encodeURIComponent(a.id)}/report`}>offline HTML report</a>
      </div>
      <section>
        <h2>Timeline</h2>
        {win && (
          <div className="window">
            Window {fmtMs(win[0] - t0)} – {fmtMs(win[1] - t0)} ({fmtMs(win[1] - win[0])}){' '}
            <button onClick={() => setParams({ ...params, from: '', until: '' })} data-testid="clear-window">
              clear window
            </button>
          </div>
        )}
        <Timeline
          rep={rep}
          window={win}
          onWindow={([f, u]) => setParams({ ...params, from: f, until: u })}
          selectedStage={stage}
          onStage={selectStage}
          stragglers={stragglers}
        />
        <div ref={chartsRef} className="charts">
          {samples && samples.series && samples.series.length > 0 && (
            <MetricChart
              chart={{
                name: `profile samples per ${samples.stepMs / 1000} s (${samples.type.name})`,
                series: samples.series.map((x) => ({ unit: samples.type.unit, executorId: x.key || undefined, source: 'samples', points: x.points })),
              }}
              range={range}
              markers={markers}
              width={width}
            />
          )}
          {chartsOf(rep.metrics)
            .slice(0, 4)
            .map((c) => (
              <MetricChart key={c.name} chart={c} range={range} markers={markers} width={width} />
            ))}
          {(!rep.metrics || rep.metrics.length === 0) && (
            <p className="muted">No metric series: import profiler records (JFR, Uber CpuAndMemory) with the app to see CPU, heap and GC here.</p>
          )}
        </div>
      </section>
      <section>
        <h2>Findings</h2>
        <Findings findings={rep.findings} onStage={selectStage} />
      </section>
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
          selectedKey={stage}
          onRowClick={(s) => selectStage(s.stageId)}
          initialSort={{ key: 'stageId', desc: false }}
          columns={[
            { key: 'stageId', title: 'Stage', align: 'right', render: (s) => `${s.stageId}${s.attempt ? `.${s.attempt}` : ''}` },
            { key: 'name', title: 'Name', render: (s) => <span title={s.name}>{s.name.slice(0, 60)}</span> },
            { key: 'status', title: 'Status' },
            { key: 'taskCount', title: 'Tasks', align: 'right', render: (s) => `${s.taskCount}${s.failedTaskCount ? ` (${s.failedTaskCount} failed)` : ''}` },
            { key: 'durationMs', title: 'Duration', align: 'right', render: (s) => fmtMs(s.durationMs) },
            { key: 'input', title: 'Input', align: 'right', sort: (s) => s.metrics.inputBytes, render: (s) => fmtBytes(s.metrics.inputBytes) },
            {
              key: 'shuffleRead',
              title: 'Shuffle read',
              align: 'right',
              sort: (s) => s.metrics.shuffleRemoteBytesRead + s.metrics.shuffleLocalBytesRead,
              render: (s) => fmtBytes(s.metrics.shuffleRemoteBytesRead + s.metrics.shuffleLocalBytesRead),
            },
            { key: 'shuffleWrite', title: 'Shuffle write', align: 'right', sort: (s) => s.metrics.shuffleWriteBytes, render: (s) => fmtBytes(s.metrics.shuffleWriteBytes) },
            { key: 'spill', title: 'Spill (disk)', align: 'right', sort: (s) => s.metrics.diskBytesSpilled, render: (s) => fmtBytes(s.metrics.diskBytesSpilled) },
            { key: 'gc', title: 'GC', align: 'right', sort: (s) => s.metrics.jvmGcTime, render: (s) => fmtMs(s.metrics.jvmGcTime) },
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
          ]}
          rows={stages}
        />
      </section>
      <section>
        <h2>
          Flame graph: {stage !== null ? `stage ${stage}` : 'whole app'}
          {win ? ', window' : ''}
        </h2>
        {stage !== null && (
          <p>
            <a href={href('/diff', { app: a.id, stage, percent: 10 })} data-testid="slow-vs-rest">
              Slowest 10% of stage {stage}'s tasks vs the rest
            </a>{' '}
            · <a onClick={() => selectStage(stage)} className="clickable">back to the whole app</a>
          </p>
        )}
        {hasProfiles ? (
          <>
            <p>
              <a href={href('/flame', sel)}>open on the flame graph page</a> ·{' '}
              <a href={href('/latency', { query: sel.query, from: sel.from, until: sel.until })}>latency view</a> ·{' '}
              <a href={href('/heap', { query: sel.query, from: sel.from, until: sel.until })}>heap view</a>
            </p>
            <OtherRuns app={a} appIds={appIds} />
            <FlameView sel={sel} onType={(t) => setParams({ ...params, type: t })} />
          </>
        ) : (
          <p className="muted" data-testid="no-profiles">
            No profile samples are labelled with this app id. Add the sparkprof agent to the job
            (<code>--conf spark.plugins=…</code>, see docs/agent.md), or import profiles with{' '}
            <code>sparkprof import --app {a.id}</code>.
          </p>
        )}
      </section>
      <section>
        <h2>Executors</h2>
        <Table
          testid="executors"
          initialSort={{ key: 'id', desc: false }}
          columns={[
            // Numbers in order (2 before 10), the driver first.
            { key: 'id', title: 'Executor', sort: (e) => (e.id === 'driver' ? -1 : Number.isNaN(Number(e.id)) ? e.id : Number(e.id)) },
            { key: 'host', title: 'Host' },
            { key: 'cores', title: 'Cores', align: 'right' },
            { key: 'addedMs', title: 'Added', render: (e) => fmtTime(e.addedMs) },
            { key: 'removedMs', title: 'Removed', render: (e) => fmtTime(e.removedMs) },
            { key: 'removalReason', title: 'Removal reason' },
            { key: 'totalTasks', title: 'Tasks', align: 'right', render: (e) => `${e.totalTasks}${e.failedTasks ? ` (${e.failedTasks} failed)` : ''}` },
            { key: 'totalDurationMs', title: 'Task time', align: 'right', render: (e) => fmtMs(e.totalDurationMs) },
            { key: 'totalGCTimeMs', title: 'GC', align: 'right', render: (e) => fmtMs(e.totalGCTimeMs) },
            { key: 'totalShuffleRead', title: 'Shuffle read', align: 'right', render: (e) => fmtBytes(e.totalShuffleRead) },
          ]}
          rows={rep.executors}
        />
      </section>
      <LogFindings findings={rep.findings} />
    </div>
  );
}
