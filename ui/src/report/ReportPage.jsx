// The offline report of one application: its facts, findings, timeline
// with its metric charts, jobs with their stage DAGs, stages, executors,
// SQL executions with their plans and container log findings, drawn by
// the same components as the app page of the web UI.
import React, { useMemo, useState } from 'react';
import { Timeline } from '../Timeline';
import { AppFacts, Findings, LogFindings, Stages, Executors, stragglerTasks } from '../AppReport';
import { chartsOf } from '../Metrics';
import { Jobs } from '../Jobs';
import { SQL } from '../SQL';
import { Recommendations } from '../Recommendations';
import { PythonTime } from '../PythonTime';

// ReportPage is the whole report; clicking a stage (in the findings, the
// timeline or the stage table) selects it on the timeline and the table.
export function ReportPage({ rep }) {
  const [stage, setStage] = useState(null);
  const [job, setJob] = useState(null);
  const stragglers = useMemo(() => stragglerTasks(rep.findings), [rep]);
  const charts = useMemo(() => chartsOf(rep.metrics), [rep]);
  const markers = useMemo(() => rep.stages.flatMap((s) => [s.submitMs, s.completeMs].filter(Boolean)), [rep]);
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
        <AppFacts app={a} jobs={rep.jobs} stages={rep.stages} />
        <section>
          <h2>Findings</h2>
          <Findings findings={rep.findings} onStage={select} />
        </section>
        <Recommendations recommendations={rep.recommendations} appId={a.id} offline />
        <PythonTime python={rep.python} />
        <section>
          <h2>Timeline</h2>
          {rep.truncatedTasks > 0 && (
            <p className="muted" data-testid="tasks-truncated">
              The timeline draws the {rep.tasks.length.toLocaleString('en')} longest tasks; the {rep.truncatedTasks.toLocaleString('en')} others are left out to keep the report small.
            </p>
          )}
          <Timeline rep={rep} selectedStage={stage} onStage={select} stragglers={stragglers} charts={charts} markers={markers} />
        </section>
        <Jobs jobs={rep.jobs} stages={rep.stages} job={job} onJob={setJob} />
        <Stages stages={rep.stages} findings={rep.findings} selectedStage={stage} onStage={select} />
        <Executors executors={rep.executors} />
        <SQL sql={rep.sql} stages={rep.stages} />
        <LogFindings findings={rep.findings} />
      </main>
    </>
  );
}
