// Calls to the sparkprof server's JSON API (docs/api.md).

// getJSON fetches a JSON answer and throws an Error with the server's
// message when the status is not 200.
export async function getJSON(path, params) {
  const url = params ? `${path}?${new URLSearchParams(clean(params))}` : path;
  const resp = await fetch(url, { headers: { Accept: 'application/json' } });
  const text = await resp.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`${path}: ${resp.status} ${text.slice(0, 200)}`);
  }
  if (!resp.ok) {
    throw new Error(body.error || `${path}: ${resp.status}`);
  }
  return body;
}

// clean drops empty parameters.
export function clean(params) {
  const out = {};
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') out[k] = String(v);
  }
  return out;
}

// selector renders label matchers as a selector: {a="x", b=~"y|z"}.
export function selector(matchers) {
  const parts = [];
  for (const [name, value] of Object.entries(matchers)) {
    if (value === undefined || value === null || value === '') continue;
    if (typeof value === 'object' && value.re) {
      parts.push(`${name}=~"${escape(value.re)}"`);
    } else {
      parts.push(`${name}="${escape(String(value))}"`);
    }
  }
  return `{${parts.join(', ')}}`;
}

function escape(s) {
  return s.replace(/\\/g, '\\\\').replace(/"/g, '\\"');
}

// parseSelector reads the simple matchers (name="value" and name=~"re") of
// a selector back into an object; other forms are ignored.
export function parseSelector(sel) {
  const out = {};
  const re = /([A-Za-z_][A-Za-z0-9_.]*)\s*(=~|=)\s*"((?:[^"\\]|\\.)*)"/g;
  let m;
  while ((m = re.exec(sel || '')) !== null) {
    const v = m[3].replace(/\\(.)/g, '$1');
    out[m[1]] = m[2] === '=~' ? { re: v } : v;
  }
  return out;
}

// findingStages lists the stages a finding is about: its stage, or the
// stages a folded finding names (analysis folds a kind's findings past the
// first few into one).
export function findingStages(f) {
  if (f.stageId !== undefined && f.stageId !== null) return [f.stageId];
  return (f.evidence && f.evidence.stages) || [];
}

// minOf and maxOf return the least and greatest f(x) over items, and
// start when items is empty. Unlike Math.min(...xs) they take any number
// of items: spreading the tasks of a large app overflows the call stack.
export function minOf(items, f, start = Infinity) {
  let m = start;
  for (const x of items) {
    const v = f(x);
    if (v < m) m = v;
  }
  return m;
}

export function maxOf(items, f, start = -Infinity) {
  let m = start;
  for (const x of items) {
    const v = f(x);
    if (v > m) m = v;
  }
  return m;
}
