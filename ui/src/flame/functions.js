// What a flame graph's tree says per function: the rows of its function
// table, the frames a search matches, and the callers and callees of one
// function (the sandwich view).
import { TreeBuilder } from './tree.js';

// walk visits the nodes of t depth first, calling enter(i) before a node's
// callees and leave(i) after them.
function walk(t, enter, leave) {
  const stack = [0];
  t.children(0); // builds the child index
  while (stack.length) {
    const v = stack.pop();
    if (v < 0) {
      leave(~v);
      continue;
    }
    enter(v);
    stack.push(~v);
    const s = t.childStart[v];
    for (let k = t.childCount[v] - 1; k >= 0; k--) stack.push(s + k);
  }
}

// functionRows sums t's nodes by function: self values add up; a node adds
// its total only when no caller on its stack is the same function, so that
// a recursive function counts each stack once, as pprof and /api/v1/top
// count it. Rows: {name (index), self, total} and, in a diff, baseSelf and
// base.
export function functionRows(t) {
  const rows = new Map();
  const onPath = new Int32Array(t.names.length);
  walk(
    t,
    (i) => {
      const nm = t.name[i];
      let r = rows.get(nm);
      if (!r) {
        r = { name: nm, self: 0, total: 0, baseSelf: 0, base: 0 };
        rows.set(nm, r);
      }
      r.self += t.self[i];
      if (t.diff) r.baseSelf += t.baseSelf[i];
      if (onPath[nm] === 0) {
        r.total += t.total[i];
        if (t.diff) r.base += t.base[i];
      }
      onPath[nm]++;
    },
    (i) => {
      onPath[t.name[i]]--;
    },
  );
  return [...rows.values()];
}

// matcher returns a test of function names for a search text: a regular
// expression when it is one, else a case-insensitive substring; null for
// no search. It is given a name as written and as readableName writes it.
export function matcher(text) {
  if (!text) return null;
  let re;
  try {
    re = new RegExp(text, 'i');
  } catch {
    const lower = text.toLowerCase();
    return (s, r) => s.toLowerCase().includes(lower) || (r !== s && r.toLowerCase().includes(lower));
  }
  return (s, r) => re.test(s) || (r !== s && re.test(r));
}

// matches marks the names of t that test matches, as a Uint8Array by name
// index.
export function matches(t, test) {
  const m = new Uint8Array(t.names.length);
  for (let i = 0; i < t.names.length; i++) m[i] = test(t.names[i], t.readable(i)) ? 1 : 0;
  return m;
}

// matchedTotal sums the totals of the matched nodes under node from (the
// root by default) that have no matched caller, so that nested matches
// count once. Nodes are in level order: a parent is seen before its
// children. A node's state: 0 outside from's subtree, 1 inside it, 2
// inside and under a match.
export function matchedTotal(t, named, from = 0) {
  const state = new Uint8Array(t.n);
  const { parent, name, total } = t;
  let sum = 0;
  state[from] = 1;
  for (let i = from; i < t.n; i++) {
    let s = i === from ? 1 : state[parent[i]];
    if (s === 1 && named[name[i]]) {
      sum += total[i];
      s = 2;
    }
    state[i] = s;
  }
  return sum;
}

// callees merges the subtrees of fn's outermost calls (those with no call
// of fn above them on their stack) into one tree rooted at fn.
export function callees(t, fn) {
  const b = new TreeBuilder(t.names, t.diff);
  const copy = (from, to) => {
    // Copies the subtree under from (already mapped to to), depth first.
    const stack = [[from, to]];
    while (stack.length) {
      const [v, w] = stack.pop();
      b.add(w, t.self[v]);
      if (t.diff) b.add(w, t.baseSelf[v], true);
      for (const c of t.children(v)) stack.push([c, b.child(w, t.name[c])]);
    }
  };
  outermost(t, fn, (i) => copy(i, 0));
  return b.finish(fn);
}

// callers merges the stacks from the root down to fn's outermost calls,
// turned over: fn is the root, its callers its children, and so on up to
// the threads' first frames.
export function callers(t, fn) {
  const b = new TreeBuilder(t.names, t.diff);
  outermost(t, fn, (i) => {
    let w = 0;
    for (let p = t.parent[i]; p > 0; p = t.parent[p]) w = b.child(w, t.name[p]);
    b.add(w, t.total[i]);
    if (t.diff) b.add(w, t.base[i], true);
  });
  return b.finish(fn);
}

// outermost calls f with each node of function fn that has no caller of
// fn on its stack.
function outermost(t, fn, f) {
  let depth = 0;
  walk(
    t,
    (i) => {
      if (t.name[i] === fn) {
        if (depth === 0) f(i);
        depth++;
      }
    },
    (i) => {
      if (t.name[i] === fn) depth--;
    },
  );
}
