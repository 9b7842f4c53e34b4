// Diffs: a stage's slowest tasks against its typical ones, or any two
// selections (e.g. two runs of the same app). Red grew, blue shrank; the
// baseline is normalised to the new total.
import React, { useMemo, useState } from 'react';
import { getJSON, selector } from '../api';
import { fmtValue, fmtMs } from '../format';
import { useAsync, ErrorBox, Loading } from '../common';
import { SelectionBar, states } from '../Selection';
import { ExportLinks, FoldedNote, maxNodes } from '../Flame';
import { FlameGraph } from '../flame/FlameGraph';
import { fromDiffFlamebearer } from '../flame/tree';

// DiffPickers picks the diff's profile type, among those of the selection
// typesOf (a side's query), and the thread state its samples were in.
function DiffPickers({ typesOf, type, state, onChange }) {
  const { data } = useAsync(() => getJSON('/api/v1/render', { query: typesOf, maxNodes: 1 }), [typesOf]);
  const types = data?.types || [];
  return (
    <span className="diff-pickers">
      <label>
        Profile type{' '}
        <select value={type || data?.type || ''} onChange={(e) => onChange({ type: e.target.value })} data-testid="diff-type">
          {types.map((t) => (
            <option key={t.name} value={t.name}>
              {t.name} ({t.unit})
            </option>
          ))}
        </select>
      </label>{' '}
      <label>
        thread state{' '}
        <select value={state || ''} onChange={(e) => onChange({ state: e.target.value })} data-testid="diff-state">
          {states.map((s) => (
            <option key={s} value={s}>
              {s || 'all'}
            </option>
          ))}
        </select>
      </label>
    </span>
  );
}

// DiffView fetches a diff with load(maxNodes) and draws it, its smallest
// frames folded as the flame graph's are until the user asks for all.
function DiffView({ load, deps, title }) {
  const [allFrames, setAllFrames] = useState(false);
  const { data, error } = useAsync(() => load(allFrames ? 0 : maxNodes), [...deps, allFrames]);
  const tree = useMemo(() => data && fromDiffFlamebearer(data.flamebearer), [data]);
  if (error) return <ErrorBox error={error} />;
  if (!data) return <Loading what="diff" />;
  const unit = data.metadata.unit;
  return (
    <div className="flame" data-testid="diff">
      <div className="flame-head">
        <strong>{title}</strong>
        <span className="muted">
          baseline {fmtValue(data.leftTicks, unit)} · comparison {fmtValue(data.rightTicks, unit)} ({data.metadata.name})
        </span>
        {data.slowTaskIds && (
          <span className="muted" data-testid="slow-tasks">
            {' '}
            · {data.slowTaskIds.length === 1 ? 'the slowest task' : `${data.slowTaskIds.length} slow tasks`} ({fmtMs(data.thresholdMs)} or longer;{' '}
            {data.slowTaskIds.length === 1 ? 'task' : 'tasks'} {data.slowTaskIds.slice(0, 10).join(', ')}
            {data.slowTaskIds.length > 10 ? ', …' : ''}) against {data.restTasks === 1 ? 'one other' : `${data.restTasks} others`} (median{' '}
            {fmtMs(data.restMedianMs)})
          </span>
        )}
      </div>
      <FoldedNote folded={data.folded} onShowAll={() => setAllFrames(true)} />
      <FlameGraph t={tree} unit={unit} />
    </div>
  );
}

export function DiffPage({ params, setParams }) {
  if (params.app && params.stage !== undefined) {
    const pct = params.percent || 10;
    return (
      <div>
        <h1>
          Stage {params.stage} of <a href={`#/apps/${encodeURIComponent(params.app)}`}>{params.app}</a>: slowest {pct}% of tasks vs the rest
        </h1>
        <p className="muted">
          Baseline: the stage's typical tasks; comparison: its slowest tasks by duration. Frames in red take a larger share in
          the slow tasks.{' '}
          <label>
            slowest{' '}
            <select value={pct} onChange={(e) => setParams({ ...params, percent: e.target.value })}>
              {[1, 5, 10, 25, 50].map((p) => (
                <option key={p} value={p}>
                  {p}%
                </option>
              ))}
            </select>
          </label>{' '}
          <DiffPickers
            typesOf={selector({ spark_app_id: params.app, spark_stage_id: String(params.stage) })}
            type={params.type}
            state={params.state}
            onChange={(p) => setParams({ ...params, ...p })}
          />
        </p>
        <DiffView
          title="typical → slowest"
          load={(limit) =>
            getJSON(`/api/v1/apps/${encodeURIComponent(params.app)}/stages/${params.stage}/slow-vs-rest`, { percent: pct, type: params.type, state: params.state, maxNodes: limit })
          }
          deps={[params.app, params.stage, pct, params.type, params.state]}
        />
      </div>
    );
  }
  const base = { query: params.base || '{}', from: params.baseFrom, until: params.baseUntil };
  const next = { query: params.next || '{}', from: params.nextFrom, until: params.nextUntil };
  return (
    <div>
      <h1>Diff of two selections</h1>
      <p className="muted">Pick a baseline and a comparison, e.g. yesterday's and today's run of the same job (two app ids).</p>
      <h3>Baseline</h3>
      <SelectionBar sel={base} showState={false} onChange={(s) => setParams({ ...params, base: s.query, baseFrom: s.from, baseUntil: s.until })} />
      <h3>Comparison</h3>
      <SelectionBar sel={next} showState={false} onChange={(s) => setParams({ ...params, next: s.query, nextFrom: s.from, nextUntil: s.until })} />
      {params.base && params.next ? (
        <>
          <p>
            <DiffPickers typesOf={next.query} type={params.type} state={params.state} onChange={(p) => setParams({ ...params, ...p })} />
          </p>
          <p className="exports-pair" data-testid="diff-exports">
            Baseline: <ExportLinks sel={{ query: base.query, type: params.type, from: base.from, until: base.until, state: params.state }} />
            <br />
            Comparison: <ExportLinks sel={{ query: next.query, type: params.type, from: next.from, until: next.until, state: params.state }} />
            <br />
            <span className="muted">
              e.g. <code>go tool pprof -diff_base baseline.pb.gz comparison.pb.gz</code>
            </span>
          </p>
          <DiffView
          title="baseline → comparison"
          load={(limit) =>
            getJSON('/api/v1/diff', {
              maxNodes: limit,
              base: base.query,
              next: next.query,
              type: params.type,
              state: params.state,
              baseFrom: base.from,
              baseUntil: base.until,
              nextFrom: next.from,
              nextUntil: next.until,
            })
          }
            deps={[params.base, params.next, params.type, params.state, base.from, base.until, next.from, next.until]}
          />
        </>
      ) : (
        <div className="empty">Choose both selections to see the diff.</div>
      )}
    </div>
  );
}
