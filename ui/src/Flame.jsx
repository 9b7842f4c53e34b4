// The flame graph of a selection, drawn by @pyroscope/flamegraph (canvas,
// with zoom, search, sandwich, table and copy in its toolbar and menu).
import React, { useState } from 'react';
import { FlamegraphRenderer } from '@pyroscope/flamegraph';
import { getJSON, pyroscopeProfile, clean } from './api';
import { fmtValue } from './format';
import { useAsync, ErrorBox, Loading } from './common';

// exportLinks are the download links of a selection.
export function ExportLinks({ sel }) {
  const q = (format) => `/api/v1/export?${new URLSearchParams(clean({ ...sel, format }))}`;
  const abs = new URL(q('speedscope'), window.location.href).href;
  return (
    <span className="exports">
      Export:{' '}
      <a href={q('pprof')} download="profile.pb.gz" data-testid="export-pprof">
        pprof
      </a>{' '}
      <a href={q('speedscope')} download="profile.speedscope.json">
        speedscope
      </a>{' '}
      <a href={q('folded')} download="profile.folded.txt">
        folded
      </a>{' '}
      <a href={q('svg')} download="flamegraph.svg">
        SVG
      </a>{' '}
      <a href={`https://www.speedscope.app/#profileURL=${encodeURIComponent(abs)}`} target="_blank" rel="noreferrer">
        open in speedscope
      </a>
    </span>
  );
}

// typeMeaning says what frame width stands for in a sample type.
export function typeMeaning(type) {
  const m = {
    cpu: 'CPU time',
    itimer: 'CPU time',
    wall: 'wall-clock time, on and off CPU',
    samples: 'stack samples (one per thread per sampling interval)',
    alloc_bytes: 'allocated bytes (sampled)',
    alloc_objects: 'allocations (sampled)',
    lock_delay: 'time waiting for locks',
    lock_contentions: 'lock contentions',
    live_bytes: 'live heap bytes',
    live_objects: 'live objects',
  };
  return m[type] || type;
}

// bigTable is the number of functions above which the function table is
// not rendered by default: the library draws every row as a DOM node
// (18,520 rows took 9 s of a 12.5 s page load; bench/ui/flame.mjs).
const bigTable = 5000;

// maxNodes bounds the frames the page asks for: the server folds smaller
// ones into "other" frames. Drawing is about linear in frames (55,000 took
// 4 s to a first frame; bench/ui/flame.mjs), and a JVM's 10 s windows over
// a few minutes reach 100,000.
export const maxNodes = 16384;

// FoldedNote says how many small frames the server folded into "other"
// frames, with a button to ask for them all.
export function FoldedNote({ folded, onShowAll }) {
  if (!(folded > 0)) return null;
  return (
    <div className="muted" data-testid="frames-folded">
      {folded.toLocaleString('en')} small frames are folded into “other” frames to keep the page fast.{' '}
      <button onClick={onShowAll}>show all frames</button>
    </div>
  );
}

// FlameView fetches and draws the flame graph of sel ({query, type, from,
// until, state}); onType is called with the type the user picks.
export function FlameView({ sel, onType, title }) {
  const [allFrames, setAllFrames] = useState(false);
  const { data, error, loading } = useAsync(
    () => getJSON('/api/v1/render', { ...sel, maxNodes: allFrames ? 0 : maxNodes }),
    [JSON.stringify(sel), allFrames],
  );
  const [fullUI, setFullUI] = useState(false);
  if (error) return <ErrorBox error={error} />;
  if (!data) return <Loading what="flame graph" />;
  const total = data.flamebearer.numTicks;
  return (
    <div className="flame" data-testid="flame">
      <div className="flame-head">
        {title && <strong>{title}</strong>}
        <label>
          Profile type{' '}
          <select value={data.type} onChange={(e) => onType && onType(e.target.value)} data-testid="type-select">
            {(data.types || []).map((t) => (
              <option key={t.name} value={t.name}>
                {t.name} ({t.unit})
              </option>
            ))}
            {!(data.types || []).some((t) => t.name === data.type) && <option value={data.type}>{data.type}</option>}
          </select>
        </label>
        <span className="muted">
          frame width = {typeMeaning(data.type)} · {loading ? 'updating… ' : ''}
          total {fmtValue(total, data.unit)} · {data.flamebearer.names.length.toLocaleString('en')} functions
        </span>
        <ExportLinks sel={{ query: sel.query, type: data.type, from: sel.from, until: sel.until, state: sel.state }} />
      </div>
      {total === 0 ? (
        <div className="empty" data-testid="flame-empty">
          No samples in this selection. Check the Agents page, or widen the selection.
        </div>
      ) : (
        <>
          <FoldedNote folded={data.folded} onShowAll={() => setAllFrames(true)} />
          {data.flamebearer.names.length > bigTable && !fullUI && (
            <div className="muted" data-testid="table-hidden">
              {data.flamebearer.names.length.toLocaleString('en')} functions: the table and sandwich views are off to keep the
              page fast.{' '}
              <button onClick={() => setFullUI(true)}>show them anyway</button>
            </div>
          )}
          <FlamegraphRenderer
            key={fullUI ? 'full' : 'lean'}
            profile={pyroscopeProfile(data, data.type, data.unit)}
            showToolbar
            colorMode="light"
            onlyDisplay={data.flamebearer.names.length > bigTable && !fullUI ? 'flamegraph' : undefined}
          />
        </>
      )}
    </div>
  );
}
