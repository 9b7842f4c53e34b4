// Formatting of durations, sizes, times and metric values: the one place
// the web UI and the offline report turn numbers into text.

// fmtMs formats a duration in milliseconds (ms, s, min, h or d); an absent
// duration is empty.
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

// fmtBytes formats a size in bytes in binary units (B, KiB, MiB, …).
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
      return fmtMs(Math.round(v / 1e6));
    case 'bytes':
      return fmtBytes(v);
    default:
      return v.toLocaleString('en');
  }
}

// metricValue and metricUnit read a report's metric series, whose
// fractions (CPU load) are integers in permille, as percent.
export function metricValue(unit, v) {
  return unit === 'permille' ? v / 10 : v;
}

export function metricUnit(unit) {
  return unit === 'permille' ? '%' : unit;
}
