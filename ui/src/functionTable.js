// functionTable builds the rows of the flame graph's function table: per
// function name, its self and total values. It replaces the table builder of
// @pyroscope/flamegraph 0.35.6 (build.mjs swaps it in), which added a frame's
// total every time the function appeared on a stack, so that a recursive
// function (App.fib, or Spark's nested iterators and SparkPlan.execute) had a
// total of several times the whole profile. Here a frame adds to its
// function's total only when no caller on its stack is the same function,
// as pprof and /api/v1/top count it; self values add up as before.
//
// fb is a decoded flamebearer (absolute offsets); ff reads its bars (the
// library's singleFF or doubleFF). Rows have the fields the library's table
// reads: name, type, self, total and, for a diff, the per-side values.
export function functionTable(fb, ff) {
  if (!fb) return [];
  const { names, levels } = fb;
  const double = ff.format === 'double';
  const rows = new Map();
  // For the bars of the level above: start, end, name and the index of
  // their own parent in the level above them.
  let up = { start: [], end: [], name: [], parent: [] };
  const chain = [up];
  for (let i = 0; i < levels.length; i++) {
    const level = levels[i];
    const here = { start: [], end: [], name: [], parent: [] };
    let p = 0;
    for (let j = 0; j < level.length; j += ff.jStep) {
      const start = ff.getBarOffset(level, j);
      const total = ff.getBarTotal(level, j);
      const name = names[ff.getBarName(level, j)];
      while (p < up.start.length && up.end[p] <= start) p++;
      const parent = p < up.start.length ? p : -1;
      here.start.push(start);
      here.end.push(start + total);
      here.name.push(name);
      here.parent.push(parent);

      let row = rows.get(name);
      if (!row) {
        row = double
          ? { name: name || '<empty>', type: 'double', self: 0, total: 0, selfLeft: 0, selfRght: 0, selfDiff: 0,
            totalLeft: 0, totalRght: 0, totalDiff: 0, leftTicks: fb.leftTicks, rightTicks: fb.rightTicks }
          : { name: name || '<empty>', type: 'single', self: 0, total: 0 };
        rows.set(name, row);
      }
      row.self += ff.getBarSelf(level, j);
      if (double) {
        row.selfLeft += ff.getBarSelfLeft(level, j);
        row.selfRght += ff.getBarSelfRght(level, j);
        row.selfDiff += ff.getBarSelfDiff(level, j);
      }
      if (calledWithin(chain, i, parent, name)) continue;
      row.total += total;
      if (double) {
        row.totalLeft += ff.getBarTotalLeft(level, j);
        row.totalRght += ff.getBarTotalRght(level, j);
        row.totalDiff += ff.getBarTotalDiff(level, j);
      }
    }
    chain.push(here);
    up = here;
  }
  return Array.from(rows.values());
}

// calledWithin reports whether a bar of level i whose parent is bar parent
// of level i-1 has a caller named name. chain[k+1] holds level k's bars.
function calledWithin(chain, i, parent, name) {
  for (let k = i - 1, b = parent; k >= 0 && b >= 0; k--) {
    const level = chain[k + 1];
    if (level.name[b] === name) return true;
    b = level.parent[b];
  }
  return false;
}
