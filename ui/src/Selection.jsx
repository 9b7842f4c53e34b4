// The selection editor: label pickers and a raw selector, a time range and
// a thread state, shared by the flame graph, latency and heap pages.
import React, { useState, useEffect } from 'react';
import { getJSON, selector, parseSelector } from './api';
import { useAsync, RefreshControls } from './common';

const pickers = [
  ['service_name', 'app'],
  ['spark_app_id', 'app id'],
  ['spark_executor_id', 'executor'],
  ['host', 'host'],
  ['role', 'role'],
  ['spark_stage_id', 'stage'],
  ['spark_task_id', 'task', { lazy: true }],
  ['thread_pool', 'thread pool'],
];

// ranges are the relative time ranges offered; the server reads
// from=now-15m as fifteen minutes before the query.
const ranges = [
  ['', 'all time'],
  ['now-5m', 'last 5 minutes'],
  ['now-15m', 'last 15 minutes'],
  ['now-1h', 'last hour'],
  ['now-6h', 'last 6 hours'],
  ['now-24h', 'last 24 hours'],
  ['now-7d', 'last 7 days'],
];

// isRelative reports whether a from or until parameter is relative to now.
const isRelative = (t) => typeof t === 'string' && t.startsWith('now');

// RangePicker picks a relative range, or says that from and until are
// absolute times (custom); with refresh and auto-refresh for live apps.
function RangePicker({ sel, onChange }) {
  const custom = (sel.from && !isRelative(sel.from)) || (sel.until && !isRelative(sel.until));
  const value = custom ? 'custom' : sel.from || '';
  return (
    <>
      <label>
        range{' '}
        <select value={value} onChange={(e) => onChange({ ...sel, from: e.target.value, until: '' })} data-testid="range">
          {ranges.map(([v, title]) => (
            <option key={v} value={v}>
              {title}
            </option>
          ))}
          {custom && <option value="custom">custom</option>}
          {!custom && !ranges.some(([v]) => v === value) && <option value={value}>since {value}</option>}
        </select>
      </label>
      <RefreshControls />
    </>
  );
}

export const states = ['', 'RUNNABLE', 'BLOCKED', 'WAITING', 'TIMED_WAITING', 'SLEEPING', 'NATIVE'];

// LabelPicker lists the label's values among the samples the rest of the
// selection (query, without this label) selects in its time range: once an
// app is picked, its executors, stages and tasks. It is not asked again on
// every refresh: a label like spark_task_id has thousands of values, which
// the server reads from the blocks' samples (a second or two for an hour of
// 100 executors). A lazy picker asks only once the user opens it.
function LabelPicker({ name, title, value, onChange, query, from, until, lazy }) {
  const [wanted, setWanted] = useState(!lazy);
  const { data, loading } = useAsync(
    () => (wanted ? getJSON('/api/v1/label-values', { name, query, from, until }) : Promise.resolve(null)),
    [name, query, from, until, wanted],
    { refresh: false, defer: true },
  );
  const v = typeof value === 'string' ? value : '';
  if (!lazy && (!data || data.length === 0)) return null;
  const values = data || (v ? [v] : []);
  return (
    <label>
      {title}{' '}
      <select value={v} onChange={(e) => onChange(e.target.value)} onFocus={() => setWanted(true)} onMouseDown={() => setWanted(true)} data-testid={`pick-${name}`}>
        <option value="">{lazy && wanted && loading ? 'listing…' : 'all'}</option>
        {values.slice(0, 2000).map((x) => (
          <option key={x} value={x}>
            {x}
          </option>
        ))}
      </select>
    </label>
  );
}

// SelectionBar edits sel ({query, from, until, state}) and calls onChange
// with the new selection.
export function SelectionBar({ sel, onChange, showState = true }) {
  const [raw, setRaw] = useState(sel.query || '{}');
  useEffect(() => setRaw(sel.query || '{}'), [sel.query]);
  const matchers = parseSelector(sel.query);
  const set = (name, value) => {
    const m = { ...matchers, [name]: value || undefined };
    onChange({ ...sel, query: selector(m) });
  };
  const toLocal = (ms) =>
    ms && !isRelative(ms) && Number.isFinite(Number(ms)) ? new Date(Number(ms) - new Date().getTimezoneOffset() * 60000).toISOString().slice(0, 19) : '';
  const fromLocal = (s) => (s ? String(new Date(s).getTime()) : '');
  return (
    <div className="selbar" data-testid="selection">
      <div className="row">
        {pickers.map(([name, title, opts]) => (
          <LabelPicker
            key={name}
            name={name}
            title={title}
            value={matchers[name]}
            onChange={(v) => set(name, v)}
            query={selector({ ...matchers, [name]: undefined })}
            from={sel.from}
            until={sel.until}
            lazy={opts?.lazy}
          />
        ))}
        {showState && (
          <label>
            thread state{' '}
            <select value={sel.state || ''} onChange={(e) => onChange({ ...sel, state: e.target.value })}>
              {states.map((s) => (
                <option key={s} value={s}>
                  {s || 'all'}
                </option>
              ))}
            </select>
          </label>
        )}
      </div>
      <div className="row">
        <form
          onSubmit={(e) => {
            e.preventDefault();
            onChange({ ...sel, query: raw });
          }}
        >
          <label>
            selector{' '}
            <input className="query" value={raw} onChange={(e) => setRaw(e.target.value)} spellCheck={false} data-testid="query" />
          </label>
          <button type="submit">Apply</button>
        </form>
      </div>
      <div className="row">
        <RangePicker sel={sel} onChange={onChange} />
        <label>
          from <input type="datetime-local" step="1" value={toLocal(sel.from)} onChange={(e) => onChange({ ...sel, from: fromLocal(e.target.value) })} />
        </label>
        <label>
          until <input type="datetime-local" step="1" value={toLocal(sel.until)} onChange={(e) => onChange({ ...sel, until: fromLocal(e.target.value) })} />
        </label>
      </div>
    </div>
  );
}
