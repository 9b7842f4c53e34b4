// A stage attempt, as the History Server's stage page shows it: its facts
// and DAG, the quantiles of its tasks' metrics, its tasks per executor,
// its task table (sorted and paged by the server: a stage of 200,000
// tasks is never loaded whole) and its flame graph.
import React, { useMemo } from 'react';
import { getJSON, selector } from '../api';
import { fmtBytesIn, fmtMs, fmtTime, sizeUnit, fmtBytes, stageTasks } from '../format';
import { href } from '../router';
import { useAsync, ErrorBox, Loading, Table } from '../common';
import { StageDAG, jobStages } from '../Jobs';
import { FlameView, ThreadScope, appFlameSelection } from '../Flame';
import { Timeline } from '../Timeline';
import { decode } from '../tasks';
import { StagePython } from '../PythonTime';

const PAGE = 100;

// Quantiles is the summary table: a row per metric, its minimum,
// quartiles and maximum, sizes of a row in one unit.
function Quantiles({ page }) {
  if (page.summarized === 0) return <p className="muted">No task of this attempt succeeded: nothing to summarise.</p>;
  const fmt = (q) => {
    if (q.unit === 'ms') return (v) => fmtMs(v);
    if (q.unit === 'bytes') {
      const u = sizeUnit(q.values[4]);
      return (v) => fmtBytesIn(v, u);
    }
    return (v) => v.toLocaleString('en');
  };
  return (
    <table className="grid quantiles" data-testid="quantiles">
      <thead>
        <tr>
          <th>Metric ({page.summarized.toLocaleString('en')} successful tasks)</th>
          {['Min', '25th percentile', 'Median', '75th percentile', 'Max'].map((h) => (
            <th key={h} className="num">
              {h}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {page.quantiles
          .filter((q) => q.unknown || q.values[4] > 0 || q.metric === 'Duration')
          .map((q) =>
            q.unknown ? (
              <tr key={q.metric} className="unknown">
                <td>{q.metric}</td>
                <td colSpan={5} className="muted" title="the tasks carry no metrics: a container log gives only their times">
                  unknown
                </td>
              </tr>
            ) : (
              <tr key={q.metric}>
                <td>{q.metric}</td>
                {q.values.map((v, i) => (
                  <td key={i} className="num">
                    {fmt(q)(v)}
                  </td>
                ))}
              </tr>
            ),
          )}
      </tbody>
    </table>
  );
}

// taskColumns are the task table's columns: key is the server's sort key.
// A task without metrics (from a container log) has only its times.
const unknown = (
  <span className="muted" title="no task metrics: a container log gives only the task's times">
    unknown
  </span>
);
const ms = (key, title, get) => ({ key, title, num: true, render: (t) => (t.noMetrics ? unknown : fmtMs(get(t))) });
const bytes = (key, title, get) => ({ key, title, num: true, render: (t) => (t.noMetrics ? unknown : fmtBytes(get(t))) });
const taskColumns = [
  { key: 'index', title: 'Index', num: true, render: (t) => t.index },
  { key: 'id', title: 'Task', num: true, render: (t) => t.taskId },
  { key: 'attempt', title: 'Attempt', num: true, render: (t) => t.attempt },
  { key: 'status', title: 'Status', render: (t) => (t.status === 'SUCCESS' ? 'success' : <span className="bad">{t.status.toLowerCase()}</span>) },
  { key: 'executor', title: 'Executor', render: (t) => t.executorId },
  { key: 'host', title: 'Host', render: (t) => t.host },
  { key: 'locality', title: 'Locality', render: (t) => t.locality },
  { key: 'launch', title: 'Launched', render: (t) => fmtTime(t.launchMs) },
  { key: 'duration', title: 'Duration', num: true, render: (t) => fmtMs(t.durationMs) },
  ms('schedulerDelay', 'Scheduler delay', (t) => t.schedulerDelayMs),
  ms('deserialize', 'Deserialise', (t) => t.metrics.executorDeserializeTime),
  ms('runTime', 'Run time', (t) => t.metrics.executorRunTime),
  ms('gc', 'GC', (t) => t.metrics.jvmGcTime),
  bytes('input', 'Input', (t) => t.metrics.inputBytes),
  bytes('shuffleRead', 'Shuffle read', (t) => t.metrics.shuffleRemoteBytesRead + t.metrics.shuffleLocalBytesRead),
  ms('fetchWait', 'Shuffle wait', (t) => t.metrics.shuffleFetchWaitTime),
  bytes('shuffleWrite', 'Shuffle write', (t) => t.metrics.shuffleWriteBytes),
  bytes('diskSpill', 'Spill (disk)', (t) => t.metrics.diskBytesSpilled),
  bytes('peakMemory', 'Peak memory', (t) => t.metrics.peakExecutionMemory),
];

// TaskTable is a page of the stage's tasks, sorted by the server.
function TaskTable({ app, appAttempt, stage, attempt, params, setParams }) {
  const sort = params.sort || 'index';
  const desc = params.desc === 'true';
  const at = Number(params.page || 0);
  const { data, error, loading } = useAsync(
    () => getJSON(`/api/v1/apps/${encodeURIComponent(app)}/stages/${stage}/tasks`, { appAttempt, attempt, sort, desc, offset: at * PAGE, limit: PAGE }),
    [app, appAttempt, stage, attempt, sort, desc, at],
  );
  if (error) return <ErrorBox error={error} />;
  if (!data) return <Loading what="tasks" />;
  const pages = Math.max(1, Math.ceil(data.total / PAGE));
  const go = (p) => setParams({ ...params, page: Math.min(Math.max(0, p), pages - 1) });
  return (
    <section>
      <h2>Tasks ({data.total.toLocaleString('en')})</h2>
      <div className="row pager" data-testid="task-pager">
        <button onClick={() => go(0)} disabled={at === 0}>
          first
        </button>
        <button onClick={() => go(at - 1)} disabled={at === 0} data-testid="task-prev">
          previous
        </button>
        <span data-testid="task-page">
          page {at + 1} of {pages.toLocaleString('en')}
        </span>
        <button onClick={() => go(at + 1)} disabled={at + 1 >= pages} data-testid="task-next">
          next
        </button>
        <button onClick={() => go(pages - 1)} disabled={at + 1 >= pages}>
          last
        </button>
        {loading && <span className="muted">loading…</span>}
      </div>
      <div className="scroll-x">
      <table className="grid nowrap task-table" data-testid="task-table" data-total={data.total} data-sort={`${sort}${desc ? ' desc' : ''}`} data-page={at}>
        <thead>
          <tr>
            {taskColumns.map((c) => (
              <th
                key={c.key}
                className={c.num ? 'num' : ''}
                onClick={() => setParams({ ...params, sort: c.key, desc: String(sort === c.key ? !desc : Boolean(c.num)), page: 0 })}
              >
                {c.title}
                {sort === c.key ? (desc ? ' ▼' : ' ▲') : ''}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {data.tasks.map((t) => (
            <tr key={t.taskId}>
              {taskColumns.map((c) => (
                <td key={c.key} className={c.num ? 'num' : ''}>
                  {c.render(t)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
      </div>
    </section>
  );
}

// Executors sums the stage's tasks per executor.
function StageExecutors({ rows, noMetrics }) {
  // A stage from a container log has its tasks' times alone.
  const known = (render) => (e) => (noMetrics ? unknown : render(e));
  return (
    <Table
      testid="stage-executors"
      initialSort={{ key: 'taskTimeMs', desc: true }}
      columns={[
        { key: 'executorId', title: 'Executor' },
        { key: 'host', title: 'Host' },
        { key: 'tasks', title: 'Tasks', align: 'right', render: (e) => `${e.tasks}${e.failed ? ` (${e.failed} failed)` : ''}${e.killed ? ` (${e.killed} killed)` : ''}` },
        { key: 'taskTimeMs', title: 'Task time', align: 'right', render: (e) => fmtMs(e.taskTimeMs) },
        { key: 'gc', title: 'GC', align: 'right', sort: (e) => e.metrics.jvmGcTime, render: known((e) => fmtMs(e.metrics.jvmGcTime)) },
        { key: 'input', title: 'Input', align: 'right', sort: (e) => e.metrics.inputBytes, render: known((e) => fmtBytes(e.metrics.inputBytes)) },
        { key: 'shuffleRead', title: 'Shuffle read', align: 'right', sort: (e) => e.metrics.shuffleRemoteBytesRead + e.metrics.shuffleLocalBytesRead, render: known((e) => fmtBytes(e.metrics.shuffleRemoteBytesRead + e.metrics.shuffleLocalBytesRead)) },
        { key: 'shuffleWrite', title: 'Shuffle write', align: 'right', sort: (e) => e.metrics.shuffleWriteBytes, render: known((e) => fmtBytes(e.metrics.shuffleWriteBytes)) },
        { key: 'spill', title: 'Spill (disk)', align: 'right', sort: (e) => e.metrics.diskBytesSpilled, render: known((e) => fmtBytes(e.metrics.diskBytesSpilled)) },
      ]}
      rows={rows}
    />
  );
}

// StageTimeline is the event timeline of a stage, as the History Server's
// stage page draws it: its tasks in their executors' lanes, coloured by
// phase, from the app's timeline (its longest 50,000 tasks).
function StageTimeline({ rep, stage }) {
  const own = useMemo(() => {
    const tasks = rep.tasks.filter((t) => t.stageId === stage.stageId);
    const execs = new Set(tasks.map((t) => t.executorId));
    return {
      ...rep,
      app: { ...rep.app, startMs: stage.submitMs || stage.firstTaskLaunchMs, endMs: stage.completeMs },
      jobs: [],
      stages: [stage],
      tasks,
      executors: rep.executors.filter((e) => execs.has(e.id)),
      findings: [],
      metrics: [],
    };
  }, [rep, stage]);
  const stragglers = useMemo(() => new Set(), []);
  if (own.tasks.length === 0) return null;
  return (
    <section data-testid="stage-timeline">
      <h2>Event timeline</h2>
      <Timeline rep={own} stragglers={stragglers} />
    </section>
  );
}

export function StagePage({ app, stage, params, setParams }) {
  const attempt = params.attempt !== undefined && params.attempt !== '' ? Number(params.attempt) : undefined;
  // appAttempt names an earlier attempt of the app (the latest without it).
  const appAttempt = params.appAttempt;
  const { data: page, error } = useAsync(() => getJSON(`/api/v1/apps/${encodeURIComponent(app)}/stages/${stage}`, { appAttempt, attempt }), [app, appAttempt, stage, attempt]);
  const { data: raw } = useAsync(() => getJSON(`/api/v1/apps/${encodeURIComponent(app)}`, { tasks: 'timeline', appAttempt }), [app, appAttempt]);
  const rep = useMemo(() => raw && decode(raw), [raw]);
  const { data: appIds } = useAsync(() => getJSON('/api/v1/label-values', { name: 'spark_app_id' }), []);
  if (error) return <ErrorBox error={error} />;
  if (!page) return <Loading what="stage" />;
  const s = page.stage;
  const appHref = href(`/apps/${encodeURIComponent(app)}`, { appAttempt });
  const stageHref = (x) => href(`/apps/${encodeURIComponent(app)}/stages/${x.stageId}`, { appAttempt });
  return (
    <div>
      <h1 data-testid="stage-title">
        Stage {s.stageId}
        {page.attempts.length > 1 ? ` (attempt ${s.attempt})` : ''}: {s.name}
      </h1>
      <div className="facts" data-testid="stage-facts">
        <span>
          of <a href={appHref}>{rep ? rep.app.name || app : app}</a>
        </span>
        {page.job && (
          <span>
            job <a href={href(`/apps/${encodeURIComponent(app)}`, { tab: 'jobs', job: page.job.jobId, appAttempt })}>{page.job.jobId}</a>
          </span>
        )}
        <span className={s.status === 'FAILED' ? 'bad' : ''}>{s.status.toLowerCase()}</span>
        <span>ran {fmtMs(s.durationMs)}</span>
        {rep && <StagePython python={rep.python} stageId={s.stageId} />}
        <span data-testid="stage-task-count" title="resubmitted: tasks that had succeeded, run again after their executor was lost with their output">
          {stageTasks(s).text}
        </span>
        {page.attempts.length > 1 && (
          <span>
            attempts:{' '}
            {page.attempts.map((a) => (
              <a key={a} href={href(`/apps/${encodeURIComponent(app)}/stages/${stage}`, { attempt: a, appAttempt })} className={a === s.attempt ? 'selected' : ''}>
                {a}{' '}
              </a>
            ))}
          </span>
        )}
      </div>
      {s.failure && <pre className="msg bad">{s.failure}</pre>}
      {rep && page.job && (
        <section>
          <h2>DAG of job {page.job.jobId}</h2>
          <StageDAG stages={jobStages(page.job, rep.stages)} stageHref={stageHref} selected={s.stageId} />
        </section>
      )}
      {rep && <StageTimeline rep={rep} stage={s} />}
      {s.accumulators?.length > 0 && (
        <section>
          <h2>Accumulators</h2>
          <table className="grid" data-testid="stage-accumulators">
            <thead>
              <tr>
                <th>Accumulable</th>
                <th>Value</th>
              </tr>
            </thead>
            <tbody>
              {s.accumulators.map((a) => (
                <tr key={a.name}>
                  <td>{a.name}</td>
                  <td>{a.value}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      )}
      <section>
        <h2>Summary of its tasks</h2>
        <Quantiles page={page} />
      </section>
      <section>
        <h2>By executor</h2>
        <StageExecutors rows={page.executors} noMetrics={s.noMetrics} />
      </section>
      <TaskTable app={app} appAttempt={appAttempt} stage={stage} attempt={s.attempt} params={params} setParams={setParams} />
      <section>
        <h2>Flame graph of stage {s.stageId}</h2>
        {(appIds || []).includes(app) ? (
          <>
            <p>
              <a href={href('/diff', { app, stage: s.stageId, percent: 10 })}>Slowest 10% of its tasks vs the rest</a> ·{' '}
              <a href={href('/flame', { query: selector({ spark_app_id: app, spark_stage_id: String(s.stageId) }) })}>open on the flame graph page</a>
            </p>
            <FlameView sel={appFlameSelection(app, s.stageId, params, null)} onType={(t) => setParams({ ...params, type: t })}>
              <ThreadScope params={params} setParams={setParams} />
            </FlameView>
          </>
        ) : (
          <p className="muted" data-testid="no-profiles">
            No profile samples are labelled with this app id.
          </p>
        )}
      </section>
    </div>
  );
}
