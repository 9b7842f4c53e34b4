// The flame graph of a selection, as the server renders it
// (/api/v1/render), drawn by the UI's own flame graph (flame/).
import React, { useMemo, useState } from 'react';
import { getJSON, clean, selector } from './api';
import { FlameGraph } from './flame/FlameGraph';
import { fromFlamebearer } from './flame/tree';
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

// maxNodes bounds the frames the page asks for: the server folds smaller
// ones into "other" frames. A JVM's 10 s windows over a few minutes reach
// 100,000 frames; drawing is about linear in frames (bench/ui/flame.mjs).
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

// NoSamples says why a flame graph is empty: the selection has samples of
// other types only (an app profiled for CPU has no allocations), which it
// offers; or none at all.
function NoSamples({ type, types, onType }) {
  const others = types.filter((t) => t.name !== type);
  if (others.length === 0) {
    return (
      <div className="empty" data-testid="flame-empty">
        No samples in this selection: widen the range, or check the Agents page for senders that stopped.
      </div>
    );
  }
  return (
    <div className="empty" data-testid="flame-empty">
      This selection has no {type} samples: it was profiled for{' '}
      {others.map((t, i) => (
        <span key={t.name}>
          {i > 0 ? ', ' : ''}
          <button onClick={() => onType && onType(t.name)} data-testid="offered-type">
            {t.name} ({t.unit})
          </button>
        </span>
      ))}
      .
    </div>
  );
}

// FlameView fetches and draws the flame graph of sel ({query, type, from,
// until, state}); onType is called with the type the user picks. children
// go in its head, after the type picker.
export function FlameView({ sel, onType, title, children }) {
  const [allFrames, setAllFrames] = useState(false);
  const { data, error, loading } = useAsync(
    () => getJSON('/api/v1/render', { ...sel, maxNodes: allFrames ? 0 : maxNodes }),
    [JSON.stringify(sel), allFrames],
  );
  const tree = useMemo(() => data && fromFlamebearer(data.flamebearer), [data]);
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
        {children}
        <span className="muted">
          frame width = {typeMeaning(data.type)} · {loading ? 'updating… ' : ''}
          total {fmtValue(total, data.unit)} · {data.flamebearer.names.length.toLocaleString('en')} functions
        </span>
        <ExportLinks sel={{ query: sel.query, type: data.type, from: sel.from, until: sel.until, state: sel.state, focus: sel.focus }} />
      </div>
      {total === 0 ? (
        <NoSamples type={data.type} types={data.types || []} onType={onType} />
      ) : (
        <>
          <FoldedNote folded={data.folded} onShowAll={() => setAllFrames(true)} />
          <FlameGraph t={tree} unit={data.unit} mark={sel.focus || ''} />
        </>
      )}
    </div>
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
