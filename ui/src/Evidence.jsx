// A finding's evidence as people read it: each number in its unit (by the
// name the analysis gives it: ...Ms durations, ...Bytes sizes, shares as
// percentages), names of code as Java writes them, and lists of records
// as tables (docs/analyze-json.md lists every kind's evidence).
import React from 'react';
import { fmtBytes, fmtMs, fmtPercent, fmtTime, sig } from './format';
import { readableName } from './names';

// label turns an evidence key into words: "wastedCoreHours" → "wasted core
// hours"; a duration's or size's unit goes, its value says it.
function label(key) {
  return key
    .replace(/(Ms|Bytes)$/, '')
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toLowerCase();
}

// codeKeys hold names of functions or classes.
const codeKeys = new Set(['leaf', 'code', 'topFrame', 'frame']);

// value writes one scalar of key.
function value(key, v) {
  if (v === null || v === undefined || v === '') return '';
  if (typeof v === 'number') {
    if (/Ms$/.test(key)) return v > 1e11 ? fmtTime(v) : fmtMs(v);
    if (/Bytes$|^bytes$/i.test(key)) return fmtBytes(v);
    if (/^share$|Share$/.test(key)) return fmtPercent(v);
    if (key === 'ratio') return `${sig(v)}×`;
    return Number.isInteger(v) ? v.toLocaleString('en') : sig(v);
  }
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (codeKeys.has(key)) return <code title={v}>{readableName(v)}</code>;
  if (typeof v === 'string' && v.includes('\n')) return <pre className="msg">{v}</pre>;
  return String(v);
}

// Records draws a list of objects as a table, one column per key.
function Records({ rows }) {
  const keys = [];
  for (const r of rows) for (const k of Object.keys(r)) if (!keys.includes(k)) keys.push(k);
  return (
    <table className="grid evidence-records">
      <thead>
        <tr>
          {keys.map((k) => (
            <th key={k}>{label(k)}</th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((r, i) => (
          <tr key={i}>
            {keys.map((k) => (
              <td key={k}>{cell(k, r[k])}</td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

// cell writes a value of any shape.
function cell(key, v) {
  if (Array.isArray(v)) {
    if (v.length && typeof v[0] === 'object' && v[0] !== null) return <Records rows={v} />;
    return v.map((x) => value(key, x)).join(', ');
  }
  if (v && typeof v === 'object') return <Evidence evidence={v} nested />;
  return value(key, v);
}

// Evidence draws an evidence object as a table of its fields; skip names
// fields drawn elsewhere; a nested object's table has no test id.
export function Evidence({ evidence, skip = [], nested = false }) {
  const entries = Object.entries(evidence || {}).filter(([k]) => !skip.includes(k));
  if (entries.length === 0) return null;
  return (
    <table className="evidence" data-testid={nested ? undefined : 'evidence'}>
      <tbody>
        {entries.map(([k, v]) => (
          <tr key={k}>
            <th>{label(k)}</th>
            <td>{cell(k, v)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
