// The flame graph page: any selection of the stored samples.
import React from 'react';
import { SelectionBar } from '../Selection';
import { FlameView } from '../Flame';

export function FlamePage({ params, setParams }) {
  const sel = { query: params.query || '{}', type: params.type, from: params.from, until: params.until, state: params.state };
  return (
    <div>
      <h1>Flame graph</h1>
      <SelectionBar sel={sel} onChange={(s) => setParams({ ...params, ...s })} />
      <FlameView sel={sel} onType={(t) => setParams({ ...params, type: t })} />
    </div>
  );
}
