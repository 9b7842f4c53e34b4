// Small building blocks shared by the pages.
import React, { createContext, useCallback, useContext, useEffect, useRef, useState } from 'react';

// Refresh asks every query on the page again: the selection bar's refresh
// button and its auto-refresh for a running app bump tick.
export const Refresh = createContext({ tick: 0, refresh: () => {}, auto: false, setAuto: () => {} });

// autoRefreshMs is how often auto-refresh asks again: the agent's
// default upload interval.
export const autoRefreshMs = 10000;

// RefreshProvider holds the page's refresh tick and auto-refresh switch.
export function RefreshProvider({ children }) {
  const [tick, setTick] = useState(0);
  const [auto, setAuto] = useState(false);
  useEffect(() => {
    if (!auto) return undefined;
    const t = setInterval(() => setTick((n) => n + 1), autoRefreshMs);
    return () => clearInterval(t);
  }, [auto]);
  return <Refresh.Provider value={{ tick, refresh: () => setTick((n) => n + 1), auto, setAuto }}>{children}</Refresh.Provider>;
}

// RefreshControls are the refresh button and the auto-refresh switch.
export function RefreshControls() {
  const { refresh, auto, setAuto } = useContext(Refresh);
  return (
    <>
      <button onClick={refresh} title="ask the server again" data-testid="refresh">
        refresh
      </button>
      <label title="ask again every 10 s, as a running app's agents send new windows">
        <input type="checkbox" checked={auto} onChange={(e) => setAuto(e.target.checked)} data-testid="auto-refresh" /> auto-refresh
      </label>
    </>
  );
}

// useAsync runs fn when deps change, or on a refresh unless refresh is
// false, and keeps its latest result (the last one stays shown while a new
// one loads); older answers that arrive late are dropped. A deferred call
// starts after the page's other requests of the same render: the browser
// sends six at a time to a server, and the flame graph's should not wait
// behind the label pickers'.
export function useAsync(fn, deps, { refresh = true, defer = false } = {}) {
  const { tick } = useContext(Refresh);
  const [state, setState] = useState({ loading: true });
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true, error: undefined }));
    const start = () =>
      fn().then(
        (data) => live && setState({ data, loading: false }),
        (error) => live && setState({ error, loading: false }),
      );
    const timer = defer ? setTimeout(start) : start();
    return () => {
      live = false;
      if (defer) clearTimeout(timer);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, refresh ? tick : 0]);
  return state;
}

// useWidth tracks the width of the element the returned callback ref is
// attached to (it may appear after the first render); the width is known
// when the element is attached, before it is first painted.
export function useWidth(initial = 900, min = 200) {
  const [w, setW] = useState(initial);
  const observer = useRef(null);
  const ref = useCallback(
    (el) => {
      observer.current?.disconnect();
      if (!el) return;
      setW(Math.max(min, el.clientWidth));
      observer.current = new ResizeObserver(() => setW(Math.max(min, el.clientWidth)));
      observer.current.observe(el);
    },
    [min],
  );
  return [ref, w];
}

export function ErrorBox({ error }) {
  if (!error) return null;
  return (
    <div className="error" role="alert">
      {String(error.message || error)}
    </div>
  );
}

export function Loading({ what }) {
  return <div className="loading">Loading {what}…</div>;
}

export function Severity({ level }) {
  return <span className={`sev sev-${level}`}>{level}</span>;
}

// Table renders rows with sortable columns. columns: [{key, title, render,
// sort (value for sorting), align}].
export function Table({ columns, rows, initialSort, rowKey, onRowClick, selectedKey, testid }) {
  const [sort, setSort] = useState(initialSort || { key: columns[0].key, desc: false });
  const col = columns.find((c) => c.key === sort.key) || columns[0];
  const value = (r) => (col.sort ? col.sort(r) : r[col.key]);
  const sorted = [...rows].sort((a, b) => {
    const x = value(a);
    const y = value(b);
    const c = x < y ? -1 : x > y ? 1 : 0;
    return sort.desc ? -c : c;
  });
  return (
    <table className="grid" data-testid={testid}>
      <thead>
        <tr>
          {columns.map((c) => (
            <th
              key={c.key}
              className={c.align === 'right' ? 'num' : ''}
              onClick={() => setSort({ key: c.key, desc: sort.key === c.key ? !sort.desc : c.align === 'right' })}
            >
              {c.title}
              {sort.key === c.key ? (sort.desc ? ' ▼' : ' ▲') : ''}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {sorted.map((r, i) => {
          const k = rowKey ? rowKey(r) : i;
          return (
            <tr
              key={k}
              className={(onRowClick ? 'clickable ' : '') + (selectedKey === k ? 'selected' : '')}
              onClick={onRowClick ? () => onRowClick(r) : undefined}
            >
              {columns.map((c) => (
                <td key={c.key} className={c.align === 'right' ? 'num' : ''}>
                  {c.render ? c.render(r) : r[c.key]}
                </td>
              ))}
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
