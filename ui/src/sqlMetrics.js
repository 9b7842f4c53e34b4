// SQL metrics of plan operators, written as the History Server's SQL page
// writes them, so that a number read here can be found there: counts with
// digit grouping; sizes in binary units with one decimal; times in ms, s,
// m or h; averages in tenths; and, for a size, time or average of more
// than one task, the total (not of an average), the minimum, median and
// maximum over the tasks, and the stage and task of the maximum.

const KiB = 1024;
const units = ['EiB', 'PiB', 'TiB', 'GiB', 'MiB', 'KiB'];

// halfUp writes x with d decimals, rounded half up (Java's %.Nf).
function halfUp(x, d) {
  const s = 10 ** d;
  return (Math.round(Math.abs(x) * s + 1e-9) / s * Math.sign(x || 1)).toFixed(d);
}

// sqlBytes writes a size in the largest binary unit it is at least 2 of.
export function sqlBytes(n) {
  for (let i = 0; i < units.length; i++) {
    const unit = KiB ** (units.length - i);
    if (n >= 2 * unit) return `${halfUp(n / unit, 1)} ${units[i]}`;
  }
  return `${halfUp(n, 1)} B`;
}

// sqlDuration writes milliseconds: ms below a second, then s, m, h.
export function sqlDuration(ms) {
  if (ms < 1000) return `${Math.trunc(ms)} ms`;
  const f = Math.fround;
  if (ms < 60000) return `${halfUp(f(f(ms) / 1000), 1)} s`;
  if (ms < 3600000) return `${halfUp(f(f(ms) / 60000), 1)} m`;
  return `${halfUp(f(f(ms) / 3600000), 2)} h`;
}

const grouped = new Intl.NumberFormat('en-US', { maximumFractionDigits: 3 });

// sqlValue writes one value of a metric of type typ; the API leaves out
// values of 0.
export function sqlValue(typ, v = 0) {
  switch (typ) {
    case 'size':
      return sqlBytes(v);
    case 'timing':
      return sqlDuration(v);
    case 'nsTiming':
      return sqlDuration(Math.trunc(v / 1e6));
    case 'average':
      return grouped.format(v / 10);
    default:
      return grouped.format(v);
  }
}

// hasStats says that a metric shows its min, med and max.
export function hasStats(m) {
  return m.known && m.type !== 'sum' && m.values > 1;
}

// maxAt names where a metric's maximum came from: a task or the driver.
export function maxAt(m) {
  return m.maxAt ? `stage ${m.maxAt.stageId}.${m.maxAt.stageAttempt}: task ${m.maxAt.taskId}` : 'driver';
}

// sqlMetricText writes a metric as the History Server's SQL page does:
// "10.0 MiB (1.0 MiB, 2.0 MiB, 3.0 MiB (stage 2.0: task 7))" under its
// header "total (min, med, max (stageId: taskId))"; header is that header,
// '' when it has none.
export function sqlMetricText(m) {
  if (!m.known) return { header: '', text: 'not reported' };
  if (!hasStats(m)) return { header: '', text: sqlValue(m.type, m.total) };
  const v = (x) => sqlValue(m.type, x);
  const stats = `${v(m.min)}, ${v(m.med)}, ${v(m.max)} (${maxAt(m)})`;
  if (m.type === 'average') return { header: '(min, med, max (stageId: taskId))', text: `(${stats})` };
  return { header: 'total (min, med, max (stageId: taskId))', text: `${v(m.total)} (${stats})` };
}
