// Unit tests of the flame graph's tree: decoding the server's
// flamebearers, the function table, search and the sandwich view.
import test from 'node:test';
import assert from 'node:assert/strict';
import { fromFlamebearer, fromDiffFlamebearer, TreeBuilder } from '../src/flame/tree.js';
import { functionRows, matchedTotal, matches, matcher, callers, callees } from '../src/flame/functions.js';

// folded builds a tree from "a;b;c value" lines, as the server would.
function folded(text) {
  const names = ['total'];
  const idx = new Map();
  const name = (s) => {
    if (!idx.has(s)) {
      idx.set(s, names.length);
      names.push(s);
    }
    return idx.get(s);
  };
  const b = new TreeBuilder(names);
  for (const line of text.trim().split('\n')) {
    const [stack, v] = line.split(' ');
    let n = 0;
    for (const f of stack.split(';')) n = b.child(n, name(f));
    b.add(n, Number(v));
  }
  return b.finish(0);
}

// byName returns {name: value} of rows.
const byName = (t, rows, f) => Object.fromEntries(rows.map((r) => [t.names[r.name], f(r)]));

test('a flamebearer decodes to its tree, parents found by offset', () => {
  // total 10: main 10 { a 4 { x 1 }, b 6 (self 1) { y 5 } }
  const fb = {
    names: ['total', 'main', 'a', 'b', 'x', 'y'],
    levels: [[0, 10, 0, 0], [0, 10, 0, 1], [0, 4, 3, 2, 0, 6, 1, 3], [0, 1, 1, 4, 3, 5, 5, 5]],
    numTicks: 10,
  };
  const t = fromFlamebearer(fb);
  assert.equal(t.n, 6);
  assert.deepEqual([...t.parent], [-1, 0, 1, 1, 2, 3]);
  assert.deepEqual([...t.depth], [0, 1, 2, 2, 3, 3]);
  assert.equal(t.x[5], 0.4); // y is b's first callee: at b's start
  assert.equal(t.w[3], 0.6);
  assert.equal(t.firstAt(3, 0.45), 5);
});

test('a diff flamebearer nests by both offsets; widths are the mean of the shares', () => {
  // baseline: main 4 { a 4 }; comparison: main 8 { a 2, b 6 }
  const fb = {
    names: ['total', 'main', 'a', 'b'],
    levels: [[0, 4, 0, 0, 8, 0, 0], [0, 4, 0, 0, 8, 0, 1], [0, 4, 4, 0, 2, 2, 2, 0, 0, 0, 0, 6, 6, 3]],
  };
  const t = fromDiffFlamebearer(fb);
  assert.ok(t.diff);
  assert.deepEqual([...t.parent], [-1, 0, 1, 1]);
  assert.deepEqual([...t.base], [4, 4, 4, 0]);
  assert.deepEqual([...t.total], [8, 8, 2, 6]);
  assert.equal(t.w[2], (1 + 0.25) / 2);
  assert.equal(t.w[3], (0 + 0.75) / 2);
  assert.equal(t.x[3], t.w[2]);
});

test('a recursive function counts its total once per stack', () => {
  const t = folded('main;fib;fib;fib 5\nmain;fib 3\nmain;other 2');
  const rows = functionRows(t);
  assert.deepEqual(byName(t, rows, (r) => r.total), { total: 10, main: 10, fib: 8, other: 2 });
  assert.deepEqual(byName(t, rows, (r) => r.self), { total: 0, main: 0, fib: 8, other: 2 });
});

test('search sums matched frames once, nested matches included', () => {
  const t = folded('main;fib;fib;fib 5\nmain;fib 3\nmain;other 2');
  assert.equal(matchedTotal(t, matches(t, matcher('fib'))), 8);
  assert.equal(matchedTotal(t, matches(t, matcher('OTHER'))), 2); // case-insensitive
  assert.equal(matchedTotal(t, matches(t, matcher('fib|other'))), 10);
  assert.equal(matchedTotal(t, matches(t, matcher('[unclosed'))), 0); // not a regular expression: a substring
});

test('the sandwich view: callees of the outermost calls, callers turned over', () => {
  const t = folded('main;a;fn;x 3\nmain;b;fn;fn;y 2\nmain;fn 1\nmain;z 4');
  const fn = t.names.indexOf('fn');
  const down = callees(t, fn);
  assert.equal(down.names[down.name[0]], 'fn');
  assert.equal(down.total[0], 6);
  assert.deepEqual(byName(down, functionRows(down), (r) => r.total), { fn: 6, x: 3, y: 2 });
  const up = callers(t, fn);
  assert.equal(up.total[0], 6);
  // fn ← a ← main (3), fn ← b ← main (2), fn ← main (1)
  const rows = byName(up, functionRows(up), (r) => r.total);
  assert.deepEqual(rows, { fn: 6, a: 3, b: 2, main: 6 });
});

test('search within a zoomed frame sums the matches under it', () => {
  const t = folded('main;fib;fib;fib 5\nmain;fib 3\nmain;other;fib 2');
  const named = matches(t, matcher('^fib$'));
  const other = [...t.name].findIndex((n) => t.names[n] === 'other');
  assert.equal(matchedTotal(t, named), 10);
  assert.equal(matchedTotal(t, named, other), 2);
});

test('Python frames are told from the JVM frames beside them', async () => {
  const { isPython } = await import('../src/flame/draw.js');
  for (const name of ['pyspark/worker.py:main', 'planted.py:slow_parse', 'pyspark/serializers.py:read_int', 'util.pyx:f']) {
    assert.equal(isPython(name), true, name);
  }
  for (const name of ['org.apache.spark.api.python.PythonRunner$$anon$2.read', 'java.lang.Thread.run', 'pyspark', 'total']) {
    assert.equal(isPython(name), false, name);
  }
});
