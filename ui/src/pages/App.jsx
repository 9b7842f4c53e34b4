// One application: timeline with metric overlays, findings, stages,
// executors, errors and log chunks, and the flame graph of what is
// selected (whole app, a stage, a brushed time window).
import React, { useMemo } from 'react';
import { getJSON, selector } from '../api';
import { fmtMs, fmtTime } from '../format';
import { href } from '../router';
import { useAsync, useWidth, ErrorBox, Loading, RefreshControls } from '../common';
import { Timeline } from '../Timeline';
import { timeSpan } from '../timelineLayout';
import { AppFacts, Findings, LogFindings, Stages, Executors, stragglerTasks } from '../AppReport';
import { MetricChart, chartsOf } from '../Metrics';
import { FlameView } from '../Flame';


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

// appFlameSelection is the selection of an app's flame graph: the app, or
// one of its stages, in a time window. By default it is the task threads'
// samples on CPU, what a slow task spends its time on; params.threads=all
// adds the other threads and their waits.
export function appFlameSelection(appId, stage, params, win) {
  const all = params.threads === 'all';
  return {
    // The server joins the app's samples to its task windows, so the stage
    // label selects a stage even when thread names carry only the task id.
    query: selector({ spark_app_id: appId, spark_stage_id: stage === null ? undefined : String(stage), thread_pool: all ? undefined : 'task' }),
    state: all ? undefined : 'RUNNABLE',
    type: params.type,
    from: win ? win[0] : undefined,
    until: win ? win[1] : undefined,
  };
}

// ThreadScope switches an app's flame graph between its task threads on
// CPU and all its threads.
export function ThreadScope({ params, setParams }) {
  return (
    <label title="Task threads on CPU: the samples of the threads that run tasks, while running. All threads adds the driver's, the shuffle's, the JVM's, and time spent waiting.">
      Threads{' '}
      <select value={params.threads === 'all' ? 'all' : ''} onChange={(e) => setParams({ ...params, threads: e.target.value })} data-testid="thread-scope">
        <option value="">task threads, on CPU</option>
        <option value="all">all threads, on and off CPU</option>
      </select>
    </label>
  );
}

export function AppPage({ id, params, setParams }) {
  const { data: rep, error } = useAsync(() => getJSON(`/api/v1/apps/${encodeURIComponent(id)}`, { tasks: 'brief' }), [id]);
  const { data: appIds } = useAsync(() => getJSON('/api/v1/label-values', { name: 'spark_app_id' }), []);
  const [chartsRef, width] = useWidth(900, 400);
  const { data: samples } = useAsync(
    () =>
      rep && (appIds || []).includes(rep.app.id)
        ? getJSON('/api/v1/series', { query: selector({ spark_app_id: rep.app.id }), by: 'spark_executor_id', step: `${Math.max(1, Math.round(((rep.app.durationMs || 60000) / 200) / 1000))}s` })
        : Promise.resolve(null),
    [rep, appIds],
  );
  const stage = params.stage !== undefined && params.stage !== '' ? Number(params.stage) : null;
  const win = params.from && params.until ? [Number(params.from), Number(params.until)] : null;
  const stragglers = useMemo(() => stragglerTasks(rep?.findings), [rep]);
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
  const [t0, t1] = timeSpan(rep);
  const range = win || [t0, t1];
  const hasProfiles = (appIds || []).includes(a.id);
  const sel = appFlameSelection(a.id, stage, params, win);
  const selectStage = (s) => setParams({ ...params, stage: s === stage ? '' : s });
  return (
    <div>
      <h1 data-testid="app-title">
        {a.name || '(unnamed)'} <code className="muted">{a.id}</code>
      </h1>
      <AppFacts app={a} stages={rep.stages} live={<RefreshControls />}>
        <a href={`/apps/${encodeURIComponent(a.id)}/report`}>offline HTML report</a>
      </AppFacts>
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
          // The charts below draw the metric series; overlays on request.
          showOverlays={false}
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
      <Stages stages={rep.stages} findings={rep.findings} window={win} selectedStage={stage} onStage={selectStage} />
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
    </div>
  );
}
