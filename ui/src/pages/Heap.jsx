// The heap view: allocation flame graph, the classes allocated most and,
// when live objects were recorded, the classes holding the most live bytes.
import React from 'react';
import { getJSON } from '../api';
import { fmtBytesIn, fmtPercent, sizeUnit } from '../format';
import { readableName } from '../names';
import { useAsync, ErrorBox } from '../common';
import { SelectionBar } from '../Selection';
import { FlameView } from '../Flame';

function TopClasses({ sel, type, title, note }) {
  const { data, error } = useAsync(() => getJSON('/api/v1/breakdown', { ...sel, type, by: 'alloc_class' }), [JSON.stringify(sel), type]);
  if (error) return <ErrorBox error={error} />;
  if (!data || data.total === 0 || data.type.name !== type) return null;
  // One unit for the table: the largest class's.
  const unit = sizeUnit(data.rows[0]?.value || 0);
  return (
    <section>
      <h2>{title}</h2>
      {note && <p className="muted">{note}</p>}
      <table className="grid" data-testid={`classes-${type}`}>
        <thead>
          <tr>
            <th>class</th>
            <th className="num">bytes</th>
            <th className="num">share</th>
          </tr>
        </thead>
        <tbody>
          {data.rows.slice(0, 25).map((r) => (
            <tr key={r.keys[0]}>
              <td>
                <code title={r.keys[0]}>{readableName(r.keys[0]) || '(unknown)'}</code>
              </td>
              <td className="num">{fmtBytesIn(r.value, unit)}</td>
              <td className="num">{fmtPercent(r.value / data.total)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

export function HeapPage({ params, setParams }) {
  const sel = { query: params.query || '{}', from: params.from, until: params.until };
  return (
    <div>
      <h1>Heap</h1>
      <SelectionBar sel={sel} showState={false} onChange={(s) => setParams({ ...params, ...s })} />
      <FlameView sel={{ ...sel, type: params.type || 'alloc_bytes' }} onType={(t) => setParams({ ...params, type: t })} title="Allocation flame graph" />
      <TopClasses sel={sel} type="alloc_bytes" title="Top allocated classes (sampled bytes)" />
      <TopClasses
        sel={sel}
        type="live_bytes"
        title="Top classes by live bytes"
        note="Each upload reports the sampled objects still alive when its recording ended; over a range of several uploads the bytes add up, so read the shares, or narrow the range to one upload for the heap at that time."
      />
    </div>
  );
}
