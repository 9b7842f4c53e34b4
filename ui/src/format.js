// Formatting of durations, sizes, counts, times and metric values: the one
// place the web UI, the offline report and the offline flame graph turn
// numbers into text. Sizes are always in binary units (KiB, MiB, GiB).

// fmtMs formats a duration in milliseconds (ms, s, min, h or d); an absent
// duration is empty.
export function fmtMs(ms) {
  if (!ms && ms !== 0) return '';
  if (Math.abs(ms) < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (Math.abs(s) < 120) return `${s.toFixed(1)} s`;
  const m = s / 60;
  if (Math.abs(m) < 120) return `${m.toFixed(1)} min`;
  const h = m / 60;
  if (Math.abs(h) < 48) return `${h.toFixed(1)} h`;
  return `${(h / 24).toFixed(1)} d`;
}

// numberFormats are the formatters of numbers with thousands separators
// and up to i decimals: made once, as each costs as much as a thousand
// formatted numbers.
const numberFormats = [];
function numberFormat(i) {
  if (!numberFormats[i]) numberFormats[i] = new Intl.NumberFormat('en', { maximumFractionDigits: i });
  return numberFormats[i];
}

// fmtNumber writes x with thousands separators and up to decimals
// decimals ("1,327", "12.5").
export function fmtNumber(x, decimals = 0) {
  return numberFormat(decimals).format(x);
}

// sig writes x with at most three significant digits, trailing zeros cut
// ("8.19", "0.99", "610", "12.5").
export function sig(x) {
  if (x === 0 || !Number.isFinite(x)) return String(x);
  const a = Math.abs(x);
  const decimals = a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : Math.min(6, 2 - Math.floor(Math.log10(a)));
  return fmtNumber(Number(x.toFixed(decimals)), decimals);
}

// fmtNs formats a duration in nanoseconds to three significant digits:
// "740 ns", "12.5 µs", "610 ms", "8.19 s", "3.5 min", "2.1 h".
export function fmtNs(ns) {
  const a = Math.abs(ns);
  if (a < 1e3) return `${sig(ns)} ns`;
  if (a < 1e6) return `${sig(ns / 1e3)} µs`;
  if (a < 1e9) return `${sig(ns / 1e6)} ms`;
  if (a < 120e9) return `${sig(ns / 1e9)} s`;
  if (a < 7200e9) return `${sig(ns / 60e9)} min`;
  return `${sig(ns / 3600e9)} h`;
}

const sizeUnits = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

// sizeUnit returns the index in sizeUnits of the largest unit in which
// bytes is at least 1: the unit a view whose largest size is bytes writes
// every size in.
export function sizeUnit(bytes) {
  let i = 0;
  let b = Math.abs(bytes);
  while (b >= 1024 && i < sizeUnits.length - 1) {
    b /= 1024;
    i++;
  }
  return i;
}

// fmtBytesIn writes bytes in the unit sizeUnit chose, to three significant
// digits: a view's sizes read in one unit ("1.2 GiB", "0.31 GiB").
export function fmtBytesIn(bytes, unit) {
  if (!bytes) return '0';
  if (unit === 0) return `${fmtNumber(Math.round(bytes))} B`;
  return `${sig(bytes / 1024 ** unit)} ${sizeUnits[unit]}`;
}

// fmtBytes formats a size in bytes in its own binary unit (B, KiB, MiB, …).
export function fmtBytes(b) {
  return fmtBytesIn(b, sizeUnit(b));
}

// fmtCount writes a count in full with thousands separators: counts of
// samples are exact, never "< 0.01 K".
export function fmtCount(n) {
  return fmtNumber(Math.round(n));
}

// plural writes a count and a noun, singular for one: "1 job", "80 jobs".
export function plural(n, noun) {
  return `${fmtNumber(n)} ${n === 1 ? noun : `${noun}s`}`;
}

// stageTasks says a stage attempt's tasks as its task table lists them:
// its distinct task attempts (the ends Spark posted again as Resubmitted
// left out) with those that failed and those resubmitted.
export function stageTasks(s) {
  const resubmitted = s.resubmittedTaskCount || 0;
  const failed = s.failedTaskCount - resubmitted;
  const more = [failed ? `${fmtNumber(failed)} failed` : '', resubmitted ? `${fmtNumber(resubmitted)} resubmitted` : ''].filter(Boolean);
  return { count: s.taskCount - resubmitted, failed, resubmitted, text: `${plural(s.taskCount - resubmitted, 'task')}${more.length ? ` (${more.join(', ')})` : ''}` };
}

// fmtTime formats a time in ms since the epoch as UTC to the second.
export function fmtTime(ms) {
  if (!ms) return '';
  return new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

// fmtValue formats a value of a profile or metric unit: durations in
// nanoseconds and bytes in their units, anything else as a number.
export function fmtValue(v, unit) {
  switch (unit) {
    case 'nanoseconds':
      return fmtNs(v);
    case 'bytes':
      return fmtBytes(v);
    case 'count':
    case 'samples':
      return fmtCount(v);
    default:
      return Number.isInteger(v) ? fmtNumber(v) : sig(v);
  }
}

// valueFormatter returns the formatter of a view's values of one unit,
// whose largest value is max: sizes in one unit for the whole view.
export function valueFormatter(unit, max) {
  if (unit === 'bytes') {
    const u = sizeUnit(max);
    return (v) => fmtBytesIn(v, u);
  }
  return (v) => fmtValue(v, unit);
}

// fmtPercent writes a share (0..1) as a percentage to three significant
// digits.
export function fmtPercent(share) {
  if (!share) return '0 %';
  return `${sig(100 * share)} %`;
}

// metricValue and metricUnit read a report's metric series, whose
// fractions (CPU load) are integers in permille, as percent.
export function metricValue(unit, v) {
  return unit === 'permille' ? v / 10 : v;
}

export function metricUnit(unit) {
  return unit === 'permille' ? '%' : unit;
}
