// sparkprof's flame graph: a FlameTree drawn on canvas (FlameCanvas), with
// search, zoom and its path, the function table and the sandwich view
// (the callers and callees of one function). The web UI's pages and the
// offline flame graph page draw with it. The root element carries for a
// reader of the page: data-total (the root's value), data-view-total (the
// value of the zoomed frame, or of the sandwich's function), data-matched
// (what a search matched).
import React, { useEffect, useMemo, useState } from 'react';
import { FlameCanvas, useTreeState } from './FlameCanvas';
import { FunctionTable } from './FunctionTable';
import { callees, callers, matchedTotal, matcher, matches } from './functions';
import { shortenFront } from '../names';
import { fmtPercent, fmtValue } from '../format';

const views = [
  ['both', 'flame graph and table'],
  ['flame', 'flame graph'],
  ['table', 'table'],
  ['sandwich', 'sandwich (callers and callees)'],
];

// Crumbs is the path to the zoomed frame; clicking a step zooms out to it.
function Crumbs({ t, focus, setFocus }) {
  return (
    <div className="flame-crumbs" data-testid="flame-crumbs">
      {t.path(focus).map((i, k) => (
        <span key={i}>
          {k > 0 && ' › '}
          <a className="clickable" onClick={() => setFocus(i)} title={t.readable(t.name[i])}>
            {shortenFront(t.readable(t.name[i]), 40)}
          </a>
        </span>
      ))}
    </div>
  );
}

// Sandwich draws the callers of function fn above it and its callees
// below.
function Sandwich({ t, fn, fmt, named, onFrame }) {
  const up = useMemo(() => callers(t, fn), [t, fn]);
  const down = useMemo(() => callees(t, fn), [t, fn]);
  const [upFocus, setUpFocus] = useTreeState(up, 0);
  const [downFocus, setDownFocus] = useTreeState(down, 0);
  return (
    <div className="sandwich" data-testid="sandwich" data-callers-total={up.total[0]} data-callees-total={down.total[0]}>
      <div className="muted">Callers of {t.readable(fn)} (it is the bottom row; its callers above)</div>
      <FlameCanvas t={up} focus={upFocus} setFocus={setUpFocus} named={named} inverted fmt={fmt} testid="flame-callers" onFrame={onFrame} />
      <div className="muted">Callees of {t.readable(fn)}</div>
      <FlameCanvas t={down} focus={downFocus} setFocus={setDownFocus} named={named} fmt={fmt} testid="flame-callees" onFrame={onFrame} />
    </div>
  );
}

// widestMatch returns the frame of t whose function mark (a search's text
// or regular expression) matches with the largest total, the shallowest
// of equals; the root when none does.
export function widestMatch(t, mark) {
  const test = matcher(mark);
  if (!test) return 0;
  const named = matches(t, test);
  let best = 0;
  for (let i = 1; i < t.n; i++) if (named[t.name[i]] && (best === 0 || t.total[i] > t.total[best])) best = i;
  return best;
}

// FlameGraph draws tree t, whose values are of unit (nanoseconds, bytes,
// count); view is the first view shown. mark, a search's text or regular
// expression (a recommendation's frame), is searched for at first, and the
// graph zoomed to its widest frame.
export function FlameGraph({ t, unit, view: initialView = 'both', mark = '' }) {
  const start = useMemo(() => widestMatch(t, mark), [t, mark]);
  const [focus, setFocus] = useTreeState(t, start);
  const [search, setSearch] = useState(mark);
  const [view, setView] = useState(initialView);
  // The picked function, for the sandwich view: marked in the graph when
  // picked in the table.
  const [pick, setPick] = useTreeState(t, { fn: null, mark: false });
  const fn = pick.fn;
  const setFn = (i) => setPick({ fn: i, mark: false });
  const test = useMemo(() => matcher(search), [search]);
  const named = useMemo(() => {
    if (test) return matches(t, test);
    if (!pick.mark) return null;
    const m = new Uint8Array(t.names.length);
    m[pick.fn] = 1;
    return m;
  }, [t, test, pick]);
  const matched = useMemo(() => (named ? matchedTotal(t, named, focus) : 0), [t, named, focus]);
  const fmt = (v) => fmtValue(v, unit);
  // The table waits until the browser is idle after the graph's first
  // frame: it is the graph that answers first.
  const [later, setLater] = useState(false);
  useEffect(() => {
    const id = requestIdleCallback(() => setLater(true), { timeout: 1000 });
    return () => cancelIdleCallback(id);
  }, []);
  const viewTotal = view === 'sandwich' && fn !== null ? null : t.total[focus];
  return (
    <div className="flamegraph" data-testid="flamegraph" data-total={t.total[0]} data-view-total={viewTotal ?? ''} data-matched={matched}>
      <div className="flame-bar">
        <input
          type="search"
          placeholder="Search functions (text or regular expression)"
          value={search}
          onChange={(e) => setSearch(e.target.value)}
          data-testid="flame-search"
        />
        <label>
          View{' '}
          <select value={view} onChange={(e) => setView(e.target.value)} data-testid="flame-view">
            {views.map(([v, title]) => (
              <option key={v} value={v}>
                {title}
              </option>
            ))}
          </select>
        </label>
        <button onClick={() => setFocus(0)} disabled={focus === 0} data-testid="flame-reset">
          reset zoom
        </button>
        {named && (
          <span data-testid="flame-matched">
            {search ? 'Matched' : t.readable(fn)}: {fmt(matched)}, {fmtPercent(t.total[focus] ? matched / t.total[focus] : 0)} of{' '}
            {focus ? 'the zoomed frame' : 'the total'}
          </span>
        )}
      </div>
      {view !== 'table' && view !== 'sandwich' && (
        <>
          <Crumbs t={t} focus={focus} setFocus={setFocus} />
          <FlameCanvas t={t} focus={focus} setFocus={setFocus} named={named} fmt={fmt} onFrame={setFn} />
        </>
      )}
      {view === 'sandwich' &&
        (fn === null ? (
          <div className="empty">Pick a function in the table (or click a frame of the flame graph) to see its callers and callees.</div>
        ) : (
          <Sandwich t={t} fn={fn} fmt={fmt} named={null} onFrame={setFn} />
        ))}
      {view !== 'flame' && later && <FunctionTable t={t} unit={unit} shown={test ? named : null} selected={fn} onSelect={(i) => setPick(i === fn && pick.mark ? { fn: null, mark: false } : { fn: i, mark: true })} />}
      <p className="muted flame-help">
        Click a frame to zoom into it, and the root or a frame above to zoom out; hover for its full name and values. A table row
        picks a function: its frames are marked, and the sandwich view shows its callers and callees.
      </p>
    </div>
  );
}
