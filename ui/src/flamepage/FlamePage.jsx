// The offline flame graph page (sparkprof flame -o x.html, and the
// server's /flame): package flamegraph embeds a profile's samples in a
// compact form, and this page filters them by sample type, thread pool,
// stage and thread name, builds the call tree and draws it with the web
// UI's flame graph.
import React, { useMemo, useState } from 'react';
import { FlameGraph } from '../flame/FlameGraph';
import { TreeBuilder, nameIndex } from '../flame/tree';

// W is the number of integers per sample row: stack, type, thread pool,
// stage, thread, value (flamegraph.sampleWidth).
const W = 6;

// buildTree builds the call tree of the rows of d (and of its baseline's,
// in a diff) that pass the filters f: {type, pool, stage, thread (a
// regular expression or '')}.
export function buildTree(d, f) {
  const names = ['total'];
  const index = nameIndex(names);
  const frameName = d.frames.map((s) => index(s));
  const b = new TreeBuilder(names, d.base !== null);
  let re = null;
  try {
    re = f.thread ? new RegExp(f.thread) : null;
  } catch {
    re = null;
  }
  const threadOK = d.threads.map((s) => !re || re.test(s));
  const nodes = new Int32Array(d.stacks.length / 2 + 1).fill(-1);
  nodes[0] = 0;
  // nodeOf returns the tree node of stack s, adding its callers first.
  const nodeOf = (s) => {
    const chain = [];
    while (nodes[s] < 0) {
      chain.push(s);
      s = d.stacks[2 * (s - 1)];
    }
    let n = nodes[s];
    for (let k = chain.length - 1; k >= 0; k--) {
      const c = chain[k];
      n = b.child(n, frameName[d.stacks[2 * (c - 1) + 1]]);
      nodes[c] = n;
    }
    return n;
  };
  const add = (rows, base) => {
    if (!rows) return;
    for (let i = 0; i < rows.length; i += W) {
      if (rows[i + 1] !== f.type || (f.pool && rows[i + 2] !== f.pool) || (f.stage && rows[i + 3] !== f.stage) || !threadOK[rows[i + 4]]) continue;
      b.add(nodeOf(rows[i]), rows[i + 5], base);
    }
  };
  add(d.base, true);
  add(d.samples, false);
  return b.finish(0);
}

// Pick is a select of a label's values; index 0 is "all".
function Pick({ title, values, value, onChange, id }) {
  if (values.length <= 1) return null;
  return (
    <label>
      {title}{' '}
      <select id={id} value={value} onChange={(e) => onChange(Number(e.target.value))}>
        {values.map((v, i) => (
          <option key={i} value={i}>
            {i === 0 ? 'all' : v}
          </option>
        ))}
      </select>
    </label>
  );
}

// FlamePage is the whole page of data d (flamegraph.pageData).
export function FlamePage({ d }) {
  const [f, setF] = useState({ type: d.type, pool: 0, stage: 0, thread: '' });
  const t = useMemo(() => buildTree(d, f), [d, f]);
  const unit = d.types.length ? d.types[f.type].split(':')[1] : 'count';
  const set = (k) => (v) => setF({ ...f, [k]: v });
  return (
    <>
      <header>
        <span className="brand">sparkprof</span>
        <h1 id="title">{d.title}</h1>
      </header>
      <main>
        <div className="row flame-filters">
          <label>
            Type{' '}
            <select id="type" value={f.type} onChange={(e) => set('type')(Number(e.target.value))}>
              {d.types.map((s, i) => (
                <option key={s} value={i}>
                  {s.replace(':', ' (')})
                </option>
              ))}
            </select>
          </label>
          <Pick title="Thread pool" id="pool" values={d.pools} value={f.pool} onChange={set('pool')} />
          <Pick title="Stage" id="stage" values={d.stages} value={f.stage} onChange={set('stage')} />
          <label>
            Thread <input id="thread" placeholder="regular expression" value={f.thread} onChange={(e) => set('thread')(e.target.value)} />
          </label>
          {d.base !== null && <span className="muted">Red grew, blue shrank: each side as a share of its own total.</span>}
        </div>
        {t.total[0] === 0 && (!t.base || t.base[0] === 0) ? (
          <div className="empty">No samples pass these filters.</div>
        ) : (
          <FlameGraph t={t} unit={unit} />
        )}
      </main>
    </>
  );
}
