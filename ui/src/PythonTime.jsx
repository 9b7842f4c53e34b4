// PythonTime shows the time PySpark's Python workers spent serving an
// app's tasks (analysis.PythonTime, from the samples the agent's py-spy
// sends): its share of the app's task time, and by stage, with its parts
// moving records and setting up tasks, and the Python functions where each
// stage's workers spent most.
import React from 'react';
import { fmtMs, fmtPercent } from './format';

export function PythonTime({ python, stageHref }) {
  if (!python) return null;
  return (
    <section data-testid="python-time">
      <h2>Python workers</h2>
      <p>
        {fmtMs(python.servingMs)} serving tasks, {fmtPercent(python.share)} of the tasks' {fmtMs(python.taskMs)} run time; {fmtMs(python.waitingMs)} waiting for a task.
      </p>
      {python.stages.length > 0 && (
        <table className="grid" data-testid="python-stages">
          <thead>
            <tr>
              <th>Stage</th>
              <th>Python time</th>
              <th>of its task time</th>
              <th>moving records</th>
              <th>setting up tasks</th>
              <th>where (self time)</th>
            </tr>
          </thead>
          <tbody>
            {python.stages.map((s) => (
              <tr key={s.stageId}>
                <td>{stageHref ? <a href={stageHref(s)}>{s.stageId}</a> : s.stageId}</td>
                <td className="num">{fmtMs(s.servingMs)}</td>
                <td className="num">{fmtPercent(s.share)}</td>
                <td className="num">{fmtMs(s.serializationMs)}</td>
                <td className="num">{fmtMs(s.setupMs)}</td>
                <td>
                  <PythonFunctions functions={s.functions} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

// PythonFunctions lists functions with their time: "planted.py:slow_parse
// 7.9 s, ...".
export function PythonFunctions({ functions }) {
  return (functions || []).map((f, i) => (
    <span key={f.name}>
      {i > 0 && ', '}
      <code>{f.name}</code> {fmtMs(f.ms)}
    </span>
  ));
}

// StagePython is one stage's Python time as a fact of its page, or null.
export function StagePython({ python, stageId }) {
  const s = python?.stages.find((x) => x.stageId === stageId);
  if (!s) return null;
  return (
    <span data-testid="stage-python">
      Python {fmtMs(s.servingMs)}, {fmtPercent(s.share)} of its task time: <PythonFunctions functions={s.functions} />
    </span>
  );
}
