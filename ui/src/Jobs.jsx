// An application's jobs with their stages, as the History Server lists
// them: a row per job; a job picked shows its stages and their DAG (each
// stage's parents, the stages whose shuffle output it reads).
import React from 'react';
import { Table } from './common';
import { Graph } from './Graph';
import { fmtMs, fmtTime, stageTasks } from './format';

// stageColor is a stage's fill in the DAG, by its status.
const stageColor = { COMPLETE: '#d5ecc9', FAILED: '#f6c9c7', SKIPPED: '#eeeeee', PENDING: '#eeeeee', ACTIVE: '#fbe3bd' };

// jobStages returns the stages a job listed, each stage's latest attempt.
export function jobStages(job, stages) {
  const want = new Set(job.stageIds || []);
  const latest = new Map();
  for (const s of stages) {
    if (!want.has(s.stageId) && s.jobId !== job.jobId) continue;
    const cur = latest.get(s.stageId);
    if (!cur || s.attempt > cur.attempt) latest.set(s.stageId, s);
  }
  return [...latest.values()].sort((a, b) => a.stageId - b.stageId);
}

// StageDAG draws stages and the parent links among them; stageHref gives
// a stage's link, selected is the stage to mark.
export function StageDAG({ stages, stageHref, selected }) {
  const ids = new Set(stages.map((s) => s.stageId));
  const nodes = stages.map((s) => ({
    id: s.stageId,
    label: `stage ${s.stageId}${s.attempt ? `.${s.attempt}` : ''}: ${s.name}`,
    sub: `${s.status.toLowerCase()}${s.durationMs ? `, ${fmtMs(s.durationMs)}` : ''}, ${stageTasks(s).text}`,
    title: `stage ${s.stageId}: ${s.name}`,
    color: stageColor[s.status],
    href: stageHref && s.status !== 'SKIPPED' ? stageHref(s) : undefined,
    selected: s.stageId === selected,
  }));
  const edges = [];
  for (const s of stages) for (const p of s.parentIds || []) if (ids.has(p)) edges.push([p, s.stageId]);
  return (
    <div className="dag">
      <Graph nodes={nodes} edges={edges} testid="stage-dag" />
    </div>
  );
}

// describeJob is a job's description, or as the History Server names a job
// without one, the name of its last stage.
function describeJob(j, stages) {
  if (j.description) return j.description;
  const ss = jobStages(j, stages);
  return ss.length ? ss[ss.length - 1].name : j.group || '';
}

// noStart stands for what a job without its JobStart event does not say.
const noStart = (
  <span className="muted" title="the log has no JobStart of this job (Spark drops events when a listener queue is full): its submission and duration are unknown">
    unknown
  </span>
);

// Jobs lists the jobs; job is the id of the one shown with its stages
// (onJob picks one), stageHref links a stage to its page.
export function Jobs({ jobs, stages, job, onJob, stageHref }) {
  const picked = jobs.find((j) => j.jobId === job);
  const count = (j) => {
    const ss = jobStages(j, stages);
    return `${ss.filter((s) => s.status === 'COMPLETE').length}/${ss.length}${ss.some((s) => s.status === 'SKIPPED') ? ` (${ss.filter((s) => s.status === 'SKIPPED').length} skipped)` : ''}`;
  };
  return (
    <section>
      <h2>Jobs</h2>
      {picked && (
        <div data-testid="job-detail">
          <h3>
            Job {picked.jobId}: its {jobStages(picked, stages).length} stages
          </h3>
          {picked.failure && <pre className="msg bad">{picked.failure}</pre>}
          <StageDAG stages={jobStages(picked, stages)} stageHref={stageHref} />
        </div>
      )}
      <p className="muted">Click a job for its stages and their DAG.</p>
      <Table
        testid="jobs"
        rowKey={(j) => j.jobId}
        selectedKey={job}
        onRowClick={(j) => onJob(j.jobId === job ? null : j.jobId)}
        initialSort={{ key: 'jobId', desc: false }}
        columns={[
          { key: 'jobId', title: 'Job', align: 'right' },
          {
            key: 'description',
            title: 'Description',
            sort: (j) => describeJob(j, stages),
            render: (j) => <span title={describeJob(j, stages)}>{describeJob(j, stages).slice(0, 80)}</span>,
          },
          { key: 'submitMs', title: 'Submitted', render: (j) => (j.submitMs ? fmtTime(j.submitMs) : noStart) },
          { key: 'durationMs', title: 'Duration', align: 'right', render: (j) => (j.submitMs ? fmtMs(j.durationMs) : noStart) },
          { key: 'stages', title: 'Stages done', sort: (j) => (j.stageIds || []).length, render: count },
          { key: 'result', title: 'Status', render: (j) => (j.result === 'JobFailed' ? <span className="bad" title={j.failure}>failed</span> : j.result ? 'succeeded' : 'running') },
          { key: 'sqlId', title: 'SQL', align: 'right', render: (j) => (j.sqlId >= 0 ? j.sqlId : '') },
        ]}
        rows={jobs}
      />
    </section>
  );
}
