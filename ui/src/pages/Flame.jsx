// The flame graph page: any selection of the stored samples, once an app
// or service is picked, as Pyroscope asks for one: a flame graph of all
// services merged answers nothing. Above the flame graph, the selection's
// samples over time (a line per value of a label, on request); dragging
// across it narrows the range.
import React from 'react';
import { getJSON, parseSelector, selector } from '../api';
import { href } from '../router';
import { useAsync, ErrorBox, Loading } from '../common';
import { SelectionBar } from '../Selection';
import { FlameView } from '../Flame';
import { SampleSeries, seriesLabels } from '../SampleSeries';

// scoped reports whether a selector names an app or a service.
function scoped(query) {
  const m = parseSelector(query);
  return Boolean(m.service_name || m.spark_app_id);
}

// PickService lists the services with samples in the range, each a link to
// its flame graph.
function PickService({ sel }) {
  const { data, error } = useAsync(() => getJSON('/api/v1/label-values', { name: 'service_name', from: sel.from, until: sel.until }), [sel.from, sel.until]);
  if (error) return <ErrorBox error={error} />;
  if (!data) return <Loading what="services" />;
  return (
    <div className="empty" data-testid="pick-service-first">
      <p>
        Pick an app (a service, as agents name it) to see its flame graph: a flame graph of every service at once mixes
        unrelated programs.
      </p>
      {data.length === 0 ? (
        <p>No service has samples in this range.</p>
      ) : (
        <ul className="services">
          {data.map((name) => (
            <li key={name}>
              <a href={href('/flame', { ...sel, query: selector({ ...parseSelector(sel.query), service_name: name }) })}>{name}</a>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

export function FlamePage({ params, setParams }) {
  const sel = { query: params.query || '{}', type: params.type, from: params.from, until: params.until, state: params.state, focus: params.focus };
  const ok = scoped(sel.query);
  return (
    <div>
      <h1>Flame graph</h1>
      <SelectionBar sel={sel} onChange={(s) => setParams({ ...params, ...s })} />
      {!ok ? (
        <PickService sel={sel} />
      ) : (
        <>
          <div className="row">
            <label>
              Samples over time{' '}
              <select value={params.by || ''} onChange={(e) => setParams({ ...params, by: e.target.value })} data-testid="series-by">
                {seriesLabels.map(([v, title]) => (
                  <option key={v} value={v}>
                    {title}
                  </option>
                ))}
              </select>
            </label>
          </div>
          {params.focus && (
            <p className="muted" data-testid="focus">
              Only the samples with a frame matching <code>{params.focus}</code>.{' '}
              <a href="#" onClick={(e) => { e.preventDefault(); setParams({ ...params, focus: undefined }); }}>
                All samples
              </a>
            </p>
          )}
          <SampleSeries sel={sel} by={params.by} onRange={([from, until]) => setParams({ ...params, from, until })} />
          <FlameView sel={sel} onType={(t) => setParams({ ...params, type: t })} />
        </>
      )}
    </div>
  );
}
