// The function table of a flame graph: each function's self and total
// (in a diff, its share of each side), sortable. Only the rows in sight
// are rendered, so that 20,000 functions scroll as smoothly as 20.
import React, { useMemo, useState } from 'react';
import { functionRows } from './functions';
import { shortenFront } from '../names';
import { fmtPercent, valueFormatter } from '../format';

const ROW_H = 22;
const VISIBLE = 24;
// NAME_CHARS is how much of a name the table shows; longer names lose
// their front (the package) and keep the class and method.
const NAME_CHARS = 110;

// columnsOf lists the table's columns: title, value of a row, text.
function columnsOf(t, unit) {
  const fmt = valueFormatter(unit, t.total[0]);
  if (!t.diff) {
    const pct = (v) => fmtPercent(t.total[0] ? v / t.total[0] : 0);
    return [
      { key: 'self', title: 'Self', value: (r) => r.self, text: (r) => fmt(r.self) },
      { key: 'selfp', title: 'Self %', value: (r) => r.self, text: (r) => pct(r.self) },
      { key: 'total', title: 'Total', value: (r) => r.total, text: (r) => fmt(r.total) },
      { key: 'totalp', title: 'Total %', value: (r) => r.total, text: (r) => pct(r.total) },
    ];
  }
  const a = (r) => (t.base[0] ? r.base / t.base[0] : 0);
  const b = (r) => (t.total[0] ? r.total / t.total[0] : 0);
  return [
    { key: 'base', title: 'Baseline', value: a, text: (r) => fmtPercent(a(r)) },
    { key: 'total', title: 'Comparison', value: b, text: (r) => fmtPercent(b(r)) },
    {
      // Sorted by the size of the change, grown or shrunk.
      key: 'change',
      title: 'Change',
      value: (r) => Math.abs(b(r) - a(r)),
      text: (r) => {
        const d = 100 * (b(r) - a(r));
        return `${d >= 0 ? '+' : ''}${d.toFixed(2)} pts`;
      },
    },
  ];
}

// FunctionTable lists t's functions; shown (a search's matches, a
// Uint8Array by name index) filters them; the row of function selected is
// marked, and onSelect is told a clicked one.
export function FunctionTable({ t, unit, shown: only, selected, onSelect }) {
  const all = useMemo(() => functionRows(t), [t]);
  const columns = useMemo(() => columnsOf(t, unit), [t, unit]);
  // A diff's table starts with the functions that changed most.
  const [sort, setSort] = useState({ key: t.diff ? 'change' : 'total', desc: true });
  const [top, setTop] = useState(0);
  const rows = useMemo(() => {
    const col = columns.find((c) => c.key === sort.key) || columns[0];
    const shown = only ? all.filter((r) => only[r.name]) : all.slice();
    const dir = sort.desc ? -1 : 1;
    if (sort.key === 'name') shown.sort((x, y) => dir * (t.names[x.name] < t.names[y.name] ? -1 : 1));
    else shown.sort((x, y) => dir * (col.value(x) - col.value(y)) || x.name - y.name);
    // A diff's root (total, 100 % on each side) heads the table, the
    // reference of the shares below it.
    const root = t.n ? t.name[0] : -1;
    if (t.diff && shown.some((r) => r.name === root)) return [shown.find((r) => r.name === root), ...shown.filter((r) => r.name !== root)];
    return shown;
  }, [all, columns, sort, only, t]);
  const first = Math.max(0, Math.floor(top / ROW_H) - 4);
  const last = Math.min(rows.length, first + VISIBLE + 8);
  const head = (key, title, num) => (
    <th key={key} className={num ? 'num' : ''} onClick={() => setSort({ key, desc: sort.key === key ? !sort.desc : key !== 'name' })}>
      {title}
      {sort.key === key ? (sort.desc ? ' ▼' : ' ▲') : ''}
    </th>
  );
  return (
    <div className="fn-table" style={{ maxHeight: ROW_H * (VISIBLE + 1) }} onScroll={(e) => setTop(e.currentTarget.scrollTop)}>
      <table className="grid" data-testid="table-view" data-rows={rows.length}>
        <thead>
          <tr>
            {head('name', 'Function', false)}
            {columns.map((c) => head(c.key, c.title, true))}
          </tr>
        </thead>
        <tbody>
          {first > 0 && <tr style={{ height: first * ROW_H }} aria-hidden="true" />}
          {rows.slice(first, last).map((r) => {
            const readable = t.readable(r.name);
            return (
              <tr key={r.name} className={`clickable${selected === r.name ? ' selected' : ''}`} style={{ height: ROW_H }} onClick={() => onSelect(r.name)}>
                <td className="fn-name" title={readable}>
                  {shortenFront(readable, NAME_CHARS)}
                </td>
                {columns.map((c) => (
                  <td key={c.key} className="num">
                    {c.text(r)}
                  </td>
                ))}
              </tr>
            );
          })}
          {last < rows.length && <tr style={{ height: (rows.length - last) * ROW_H }} aria-hidden="true" />}
        </tbody>
      </table>
    </div>
  );
}
