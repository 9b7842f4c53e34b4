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

// pyroscopeProfile turns a render or diff answer into the profile object
// @pyroscope/flamegraph draws, with units it can format.
export function pyroscopeProfile(answer, type, unit) {
  const meta = { format: answer.metadata?.format || 'single', name: type, spyName: 'javaspy', sampleRate: 1, units: 'objects' };
  switch (unit) {
    case 'nanoseconds':
      // The library calls 'samples' CPU time; other times are waits.
      if (type === 'cpu' || type === 'itimer') {
        meta.units = 'samples';
        meta.sampleRate = 1e9;
      } else {
        meta.units = 'lock_nanoseconds';
      }
      break;
    case 'bytes':
      meta.units = 'bytes';
      break;
    default:
      meta.units = type === 'lock_contentions' ? 'lock_samples' : 'objects';
  }
  const profile = { version: 1, flamebearer: answer.flamebearer, metadata: meta };
  if (meta.format === 'double') {
    profile.leftTicks = answer.leftTicks;
    profile.rightTicks = answer.rightTicks;
  }
  return profile;
}

// Formatting helpers shared by the pages.
export function fmtMs(ms) {
  if (!ms && ms !== 0) return '';
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  if (s < 120) return `${s.toFixed(1)} s`;
  const m = s / 60;
  if (m < 120) return `${m.toFixed(1)} min`;
  const h = m / 60;
  if (h < 48) return `${h.toFixed(1)} h`;
  return `${(h / 24).toFixed(1)} d`;
}

export function fmtBytes(b) {
  if (!b) return '0';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (b >= 1024 && i < units.length - 1) {
    b /= 1024;
    i++;
  }
  return `${b.toFixed(i ? 1 : 0)} ${units[i]}`;
}

export function fmtTime(ms) {
  if (!ms) return '';
  return new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

export function fmtValue(v, unit) {
  switch (unit) {
    case 'nanoseconds':
      return fmtMs(Math.round(v / 1e6));
    case 'bytes':
      return fmtBytes(v);
    default:
      return v.toLocaleString('en');
  }
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
