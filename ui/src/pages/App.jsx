// One application: its overview (timeline with its metric charts,
// findings, stages, executors, errors and log chunks, and the flame graph
// of what is selected: whole app, a stage, a brushed time window), and as
// the History Server's tabs, its jobs with their stages, its SQL
// executions with their plans, and its environment.
import React, { useMemo } from 'react';
import { getJSON, selector } from '../api';
import { fmtMs, fmtTime } from '../format';
import { href } from '../router';
import { useAsync, ErrorBox, Loading, RefreshControls } from '../common';
import { Timeline } from '../Timeline';
import { AppFacts, Findings, LogFindings, Stages, Executors, stragglerTasks } from '../AppReport';
import { chartsOf } from '../Metrics';
import { FlameView, ThreadScope, appFlameSelection } from '../Flame';
import { Jobs } from '../Jobs';
import { SQL } from '../SQL';
import { Environment } from '../Environment';
import { decode } from '../tasks';
import { Recommendations } from '../Recommendations';
import { PythonTime } from '../PythonTime';


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

// Attempts links to the app's other attempts, as the History Server keeps
// them apart, when it has several.
function Attempts({ app }) {
  const { data: apps } = useAsync(() => getJSON('/api/v1/apps'), []);
  const row = (apps || []).find((o) => o.id === app.id);
  if (!row || !row.attempts || row.attempts.length < 2) return null;
  return (
    <p data-testid="app-attempts">
      Attempts:{' '}
      {[...row.attempts].reverse().map((t, i) => (
        <span key={t.attemptId}>
          {i > 0 && ' · '}
          {t.attemptId === app.attemptId ? (
            <b>{t.attemptId}</b>
          ) : (
            <a href={href(`/apps/${encodeURIComponent(app.id)}`, { appAttempt: t.attemptId })}>{t.attemptId}</a>
          )}{' '}
          <span className="muted">
            ({fmtTime(t.startMs)}, {fmtMs(t.durationMs)}
            {t.status === 'running' ? ', running' : ''})
          </span>
        </span>
      ))}
    </p>
  );
}

// PreviousRun links to the comparison of this app with the previous run of
// its job, when the server has read one.
function PreviousRun({ app }) {
  const { data: jobs } = useAsync(() => getJSON('/api/v1/jobs'), []);
  const job = (jobs || []).find((j) => j.runs.some((r) => r.appId === app.id));
  if (!job) return null;
  const i = job.runs.findIndex((r) => r.appId === app.id);
  if (i <= 0) return null;
  const prev = job.runs[i - 1];
  return (
    <p>
      <a href={href('/compare', { old: prev.appId, new: app.id })} data-testid="compare-previous">
        Compare with the previous run of {job.name}
      </a>{' '}
      <span className="muted">
        ({prev.appId}, {fmtTime(prev.startMs)}, {fmtMs(prev.durationMs)})
      </span>
    </p>
  );
}

// tabs are the app page's views, as the History Server's tabs.
const tabs = [
  ['', 'Overview'],
  ['jobs', 'Jobs'],
  ['sql', 'SQL'],
  ['environment', 'Environment'],
];

// useSamples fetches the app's profile samples per executor over time, for
// the chart under the timeline; null when the store has none of the app.
function useSamples(rep, hasProfiles) {
  const { data } = useAsync(
    () =>
      rep && hasProfiles
        ? getJSON('/api/v1/series', { query: selector({ spark_app_id: rep.app.id }), by: 'spark_executor_id', step: `${Math.max(1, Math.round((rep.app.durationMs || 60000) / 200 / 1000))}s` })
        : Promise.resolve(null),
    [rep, hasProfiles],
  );
  return useMemo(() => {
    if (!data || !data.series || data.series.length === 0) return null;
    return {
      name: `profile samples per ${data.stepMs / 1000} s (${data.type.name})`,
      series: data.series.map((x) => ({ unit: data.type.unit, executorId: x.key || undefined, source: 'samples', points: x.points })),
    };
  }, [data]);
}

// ViewLinks links to the latency and heap views of sel when its samples
// have their types: wall-clock or stack samples, allocations or live
// objects; an app profiled for CPU alone has neither.
function ViewLinks({ sel }) {
  const { data } = useAsync(() => getJSON('/api/v1/render', { query: sel.query, from: sel.from, until: sel.until, maxNodes: 1 }), [sel.query, sel.from, sel.until]);
  const types = (data?.types || []).map((t) => t.name);
  const latency = types.find((t) => t === 'wall' || t === 'samples');
  const heap = types.find((t) => t.startsWith('alloc') || t.startsWith('live'));
  return (
    <span data-testid="view-links">
      {latency && (
        <>
          {' '}
          · <a href={href('/latency', { query: sel.query, type: latency, from: sel.from, until: sel.until })}>latency view</a>
        </>
      )}
      {heap && (
        <>
          {' '}
          · <a href={href('/heap', { query: sel.query, type: heap, from: sel.from, until: sel.until })}>heap view</a>
        </>
      )}
    </span>
  );
}

// Overview is the app's timeline with its charts, findings, stages, flame
// graph, executors and what its logs said.
function Overview({ rep, params, setParams, hasProfiles, appIds }) {
  const a = rep.app;
  const stage = params.stage !== undefined && params.stage !== '' ? Number(params.stage) : null;
  const win = params.from && params.until ? [Number(params.from), Number(params.until)] : null;
  const stragglers = useMemo(() => stragglerTasks(rep.findings), [rep]);
  const markers = useMemo(() => rep.stages.flatMap((s) => [s.submitMs, s.completeMs].filter(Boolean)), [rep]);
  const samples = useSamples(rep, hasProfiles);
  const charts = useMemo(() => [...(samples ? [samples] : []), ...chartsOf(rep.metrics).slice(0, 4)], [samples, rep]);
  const sel = appFlameSelection(a.id, stage, params, win);
  const selectStage = (s) => setParams({ ...params, stage: s === stage ? '' : s });
  const stageHref = (s) => href(`/apps/${encodeURIComponent(a.id)}/stages/${s.stageId}`, { attempt: s.attempt || undefined, appAttempt: params.appAttempt });
  return (
    <>
      <section>
        <h2>Timeline</h2>
        <Timeline
          rep={rep}
          window={win}
          onWindow={(w) => setParams({ ...params, from: w ? w[0] : '', until: w ? w[1] : '' })}
          selectedStage={stage}
          onStage={selectStage}
          stragglers={stragglers}
          charts={charts}
          markers={markers}
        />
        {charts.length === 0 && (
          <p className="muted">No metric series: import profiler records (JFR, Uber CpuAndMemory) with the app to see CPU, heap and GC here.</p>
        )}
      </section>
      <section>
        <h2>Findings</h2>
        <Findings
          findings={rep.findings}
          onStage={selectStage}
          taskFlameHref={hasProfiles ? (task) => href('/flame', { query: selector({ spark_app_id: a.id, spark_task_id: String(task) }) }) : null}
          compareHref={(o, n) => href('/compare', { old: o, new: n })}
        />
      </section>
      <Recommendations recommendations={rep.recommendations} appId={a.id} />
      <PythonTime python={rep.python} stageHref={stageHref} />
      <Stages stages={rep.stages} findings={rep.findings} window={win} selectedStage={stage} onStage={selectStage} stageHref={stageHref} />
      <section>
        <h2>
          Flame graph: {stage !== null ? `stage ${stage}` : 'whole app'}
          {win ? ', window' : ''}
        </h2>
        {stage !== null && (
          <p>
            {hasProfiles && (
              <>
                <a href={href('/diff', { app: a.id, stage, percent: 10 })} data-testid="slow-vs-rest">
                  Slowest 10% of stage {stage}'s tasks vs the rest
                </a>{' '}
                ·{' '}
              </>
            )}
            <a href={stageHref({ stageId: stage })}>stage {stage}'s page</a> ·{' '}
            <a onClick={() => selectStage(stage)} className="clickable">
              back to the whole app
            </a>
          </p>
        )}
        {hasProfiles ? (
          <>
            <p>
              <a href={href('/flame', sel)}>open on the flame graph page</a>
              <ViewLinks sel={sel} />
            </p>
            <OtherRuns app={a} appIds={appIds} />
            <FlameView sel={sel} onType={(t) => setParams({ ...params, type: t })}>
              <ThreadScope params={params} setParams={setParams} />
            </FlameView>
          </>
        ) : (
          <p className="muted" data-testid="no-profiles">
            No profile samples are labelled with this app id. Add the sparkprof agent to the job
            (<code>--conf spark.plugins=…</code>, see docs/agent.md), or import profiles with{' '}
            <code>sparkprof import --app {a.id}</code>.
          </p>
        )}
      </section>
      <Executors executors={rep.executors} />
      <LogFindings findings={rep.findings} />
    </>
  );
}

export function AppPage({ id, params, setParams }) {
  // appAttempt names an earlier attempt of the app (the latest without it).
  const appAttempt = params.appAttempt;
  const { data: raw, error } = useAsync(() => getJSON(`/api/v1/apps/${encodeURIComponent(id)}`, { tasks: 'timeline', appAttempt }), [id, appAttempt]);
  const rep = useMemo(() => raw && decode(raw), [raw]);
  const { data: appIds } = useAsync(() => getJSON('/api/v1/label-values', { name: 'spark_app_id' }), []);
  if (error) return <ErrorBox error={error} />;
  if (!rep) return <Loading what="application" />;
  const a = rep.app;
  const tab = params.tab || '';
  const stageHref = (s) => href(`/apps/${encodeURIComponent(a.id)}/stages/${s.stageId}`, { attempt: s.attempt || undefined, appAttempt });
  return (
    <div>
      <h1 data-testid="app-title">
        {a.name || '(unnamed)'} <code className="muted">{a.id}</code>
        {a.attemptId ? <span className="muted"> attempt {a.attemptId}</span> : null}
      </h1>
      <Attempts app={a} />
      <AppFacts app={a} jobs={rep.jobs} stages={rep.stages} live={<RefreshControls />}>
        <a href={`/apps/${encodeURIComponent(a.id)}/report`}>offline HTML report</a>
      </AppFacts>
      <PreviousRun app={a} />
      <nav className="tabs" data-testid="app-tabs">
        {tabs.map(([t, title]) => (
          <a key={t} href={href(`/apps/${encodeURIComponent(a.id)}`, { tab: t, appAttempt })} className={tab === t ? 'active' : ''}>
            {title}
            {t === 'sql' ? ` (${rep.sql.length})` : t === 'jobs' ? ` (${rep.jobs.length})` : ''}
          </a>
        ))}
      </nav>
      {tab === '' && <Overview rep={rep} params={params} setParams={setParams} hasProfiles={(appIds || []).includes(a.id)} appIds={appIds} />}
      {tab === 'jobs' && (
        <Jobs jobs={rep.jobs} stages={rep.stages} job={params.job !== undefined && params.job !== '' ? Number(params.job) : null} onJob={(j) => setParams({ ...params, job: j === null ? '' : j })} stageHref={stageHref} />
      )}
      {tab === 'sql' && (
        <SQL
          sql={rep.sql}
          stages={rep.stages}
          stageHref={stageHref}
          initial={params.sql !== undefined && params.sql !== '' ? Number(params.sql) : null}
          onPick={(id) => setParams({ ...params, sql: id === null ? '' : id })}
        />
      )}
      {tab === 'environment' && <Environment env={rep.environment} />}
    </div>
  );
}
