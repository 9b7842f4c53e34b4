// The latency view: wall-clock samples split by thread state per stage and
// executor, showing where tasks wait instead of compute.
import React from 'react';
import { getJSON, selector, parseSelector } from '../api';
import { fmtValue } from '../format';
import { useAsync, ErrorBox, Loading } from '../common';
import { SelectionBar } from '../Selection';
import { FlameView } from '../Flame';

const stateOrder = ['RUNNABLE', 'NATIVE', 'BLOCKED', 'WAITING', 'TIMED_WAITING', 'SLEEPING', 'UNKNOWN'];
const stateColor = {
  RUNNABLE: '#2ca02c',
  NATIVE: '#17becf',
  BLOCKED: '#d62728',
  WAITING: '#ff7f0e',
  TIMED_WAITING: '#ffbb78',
  SLEEPING: '#9467bd',
  UNKNOWN: '#aaa',
};
const dims = [
  ['spark_stage_id', 'stage'],
  ['spark_executor_id', 'executor'],
  ['spark_task_id', 'task'],
  ['thread_pool', 'thread pool'],
];

// TypePicker picks the sample type among those the selection has: the
// types /api/v1/render lists, as the flame graph's picker offers them.
function TypePicker({ sel, onChange }) {
  const { data } = useAsync(() => getJSON('/api/v1/render', { query: sel.query, from: sel.from, until: sel.until, maxNodes: 1 }), [sel.query, sel.from, sel.until]);
  const types = (data?.types || []).map((t) => t.name);
  if (!types.includes(sel.type)) types.unshift(sel.type);
  return (
    <label>
      type{' '}
      <select value={sel.type} onChange={(e) => onChange(e.target.value)} data-testid="latency-type">
        {types.map((t) => (
          <option key={t} value={t}>
            {t}
            {(data?.types || []).find((x) => x.name === t) ? ` (${data.types.find((x) => x.name === t).unit})` : ' (none selected)'}
          </option>
        ))}
      </select>
    </label>
  );
}

export function LatencyPage({ params, setParams }) {
  const sel = { query: params.query || '{}', type: params.type || 'wall', from: params.from, until: params.until };
  const by = (params.by || 'spark_stage_id,spark_executor_id').split(',').filter(Boolean);
  const { data, error } = useAsync(
    () => getJSON('/api/v1/breakdown', { ...sel, by: ['state', ...by].join(',') }),
    [JSON.stringify(sel), by.join(',')],
  );
  const groups = new Map();
  let max = 0;
  for (const r of data?.rows || []) {
    // A sample without the label (no stage: a thread outside tasks) shows as "none", not as a blank.
    const key = r.keys.slice(1).map((k) => k || 'none').join(' · ') || 'all';
    if (!groups.has(key)) groups.set(key, { key, keys: r.keys.slice(1), total: 0, states: {} });
    const g = groups.get(key);
    g.states[r.keys[0]] = (g.states[r.keys[0]] || 0) + r.value;
    g.total += r.value;
    max = Math.max(max, g.total);
  }
  const rows = [...groups.values()].sort((a, b) => b.total - a.total).slice(0, 200);
  const unit = data?.type?.unit;
  return (
    <div>
      <h1>Latency: where threads wait</h1>
      <p className="muted">
        Wall-clock samples by thread state. RUNNABLE is computing (or in Java I/O code that looks runnable), NATIVE is native
        code or I/O, BLOCKED waits for a monitor, WAITING/TIMED_WAITING park or sleep. Without wall samples (JDK JFR CPU
        profiles), pick another type: Uber stack samples of all threads also count.
      </p>
      <SelectionBar sel={sel} showState={false} onChange={(s) => setParams({ ...params, ...s })} />
      <div className="row">
        group by:{' '}
        {dims.map(([d, title]) => (
          <label key={d}>
            <input
              type="checkbox"
              checked={by.includes(d)}
              onChange={(e) => setParams({ ...params, by: (e.target.checked ? [...by, d] : by.filter((x) => x !== d)).join(',') })}
            />{' '}
            {title}
          </label>
        ))}{' '}
        <TypePicker sel={sel} onChange={(t) => setParams({ ...params, type: t })} />
      </div>
      <ErrorBox error={error} />
      {!data && !error && <Loading what="breakdown" />}
      {data && (
        <>
          <div className="legend">
            {stateOrder.map((s) => (
              <span key={s}>
                <i style={{ background: stateColor[s] }} /> {s}
              </span>
            ))}
          </div>
          <table className="grid latency" data-testid="latency">
            <thead>
              <tr>
                <th>{by.map((d) => dims.find((x) => x[0] === d)?.[1] || d).join(' · ') || 'all'}</th>
                <th className="num">total</th>
                <th>by state (click to see its flame graph)</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((g) => (
                <tr key={g.key}>
                  <td>{g.key}</td>
                  <td className="num">{fmtValue(g.total, unit)}</td>
                  <td>
                    <div className="stack" style={{ width: `${Math.max(2, (g.total / max) * 100)}%` }}>
                      {stateOrder
                        .filter((s) => g.states[s])
                        .map((s) => (
                          <span
                            key={s}
                            title={`${s}: ${fmtValue(g.states[s], unit)} (${((100 * g.states[s]) / g.total).toFixed(1)}%)`}
                            style={{ width: `${(100 * g.states[s]) / g.total}%`, background: stateColor[s] }}
                            onClick={() => {
                              const group = Object.fromEntries(by.map((d, i) => [d, g.keys[i]]));
                              setParams({ ...params, state: s, focus: selector({ ...parseSelector(sel.query), ...group }) });
                            }}
                          />
                        ))}
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {params.state && (
            <section>
              <h2>
                {params.state} samples of {params.focus || sel.query}
              </h2>
              <FlameView sel={{ ...sel, query: params.focus || sel.query, state: params.state }} />
            </section>
          )}
        </>
      )}
    </div>
  );
}
