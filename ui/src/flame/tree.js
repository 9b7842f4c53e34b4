// The call tree a flame graph draws, in flat typed arrays: one entry per
// node, numbered level by level (the root is 0, a parent before its
// children, each level in drawing order), with every node's place laid
// out as a share of the root's width. Flat arrays keep a tree of 100,000
// nodes to a few MB and let drawing, search and the function table walk it
// in one pass.
//
// A tree holds one profile's values (total and self), or, for a diff, the
// comparison's (total, self) and the baseline's (base, baseSelf). A diff's
// frame is as wide as the mean of its shares of the two profiles' totals,
// so that a frame gone from one side stays visible.

import { readableName } from '../names.js';

// FlameTree is a laid out call tree; see the fields' comments.
export class FlameTree {
  constructor({ names, name, parent, total, self, base, baseSelf }) {
    const n = name.length;
    this.n = n;
    this.names = names; // function names, indexed by name
    this.name = name; // Int32Array: node → index in names
    this.parent = parent; // Int32Array: node → parent node, -1 for the root
    this.total = total; // Float64Array: value of the node and its callees
    this.self = self; // Float64Array: value of the node alone
    this.base = base || null; // Float64Array: the baseline's total, in a diff
    this.baseSelf = baseSelf || null;
    this.diff = Boolean(base);
    this.depth = new Int32Array(n);
    for (let i = 1; i < n; i++) this.depth[i] = this.depth[parent[i]] + 1;
    this.maxDepth = n ? this.depth[n - 1] : 0;
    // levelStart[d] is the first node of depth d; nodes are in level order.
    this.levelStart = new Int32Array(this.maxDepth + 2);
    for (let i = 0, d = 0; i <= n; i++) {
      const di = i < n ? this.depth[i] : this.maxDepth + 1;
      while (d <= di) this.levelStart[d++] = i;
    }
    this.layout();
  }

  // layout sets x and w, each node's start and width as a share of the
  // root: children side by side from their parent's start, in order.
  layout() {
    const { n, parent, total, base } = this;
    this.w = new Float64Array(n);
    this.x = new Float64Array(n);
    const rootTotal = n ? total[0] : 0;
    const rootBase = base && n ? base[0] : 0;
    for (let i = 0; i < n; i++) {
      if (base) {
        const a = rootBase ? base[i] / rootBase : 0;
        const b = rootTotal ? total[i] / rootTotal : 0;
        this.w[i] = rootBase && rootTotal ? (a + b) / 2 : a + b;
      } else {
        this.w[i] = rootTotal ? total[i] / rootTotal : 0;
      }
    }
    // next[p] is where p's next child starts.
    const next = new Float64Array(n);
    for (let i = 1; i < n; i++) {
      const p = parent[i];
      this.x[i] = this.x[p] + next[p];
      next[p] += this.w[i];
    }
  }

  // readable returns the name of name index i as readableName writes it,
  // each worked out once per tree.
  readable(i) {
    if (!this.readableNames) this.readableNames = new Array(this.names.length);
    let r = this.readableNames[i];
    if (r === undefined) {
      r = readableName(this.names[i]);
      this.readableNames[i] = r;
    }
    return r;
  }

  // children returns the nodes whose parent is i, in order. Children are
  // contiguous in level order.
  children(i) {
    if (!this.childStart) {
      const { n, parent } = this;
      // first child and child count per node
      this.childStart = new Int32Array(n).fill(-1);
      this.childCount = new Int32Array(n);
      for (let c = 1; c < n; c++) {
        const p = parent[c];
        if (this.childStart[p] < 0) this.childStart[p] = c;
        this.childCount[p]++;
      }
    }
    const s = this.childStart[i];
    const out = [];
    for (let k = 0; k < this.childCount[i]; k++) out.push(s + k);
    return out;
  }

  // ancestors returns the path from the root to i, both included.
  path(i) {
    const out = [];
    for (let j = i; j >= 0; j = this.parent[j]) out.push(j);
    return out.reverse();
  }

  // level returns the first node of depth d and the one after its last.
  level(d) {
    if (d < 0 || d > this.maxDepth) return [0, 0];
    return [this.levelStart[d], this.levelStart[d + 1]];
  }

  // firstAt returns the first node of depth d that ends after share x0, by
  // binary search over the level, which is in x order.
  firstAt(d, x0) {
    let [lo, hi] = this.level(d);
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.x[mid] + this.w[mid] <= x0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

// fromFlamebearer reads the flamebearer format of /api/v1/render: each
// level a flat list of [x offset from the previous bar's end, total, self,
// name index], root first.
export function fromFlamebearer(fb) {
  return decodeLevels(fb, false);
}

// fromDiffFlamebearer reads the diff flamebearer of /api/v1/diff: bars of
// [left offset, left total, left self, right offset, right total, right
// self, name index], left the baseline and right the comparison. A bar's
// place in the levels is its left and right offsets added, which nest as
// the call tree does.
export function fromDiffFlamebearer(fb) {
  return decodeLevels(fb, true);
}

// decodeLevels turns the levels of a flamebearer (bars of 4 numbers, or 7
// in a diff) into a FlameTree. A node's parent is the bar of the level
// above whose span holds the node's start; the bars of a level come in the
// order of their parents, so one forward scan finds them all.
function decodeLevels(fb, double) {
  const step = double ? 7 : 4;
  let n = 0;
  for (const level of fb.levels) n += level.length / step;
  const name = new Int32Array(n);
  const parent = new Int32Array(n);
  const total = new Float64Array(n);
  const self = new Float64Array(n);
  const base = double ? new Float64Array(n) : null;
  const baseSelf = double ? new Float64Array(n) : null;
  // start and end of each node on the levels' axis (left and right
  // offsets added in a diff)
  const start = new Float64Array(n);
  const end = new Float64Array(n);
  let i = 0;
  let prevLo = 0;
  let prevHi = 0;
  for (const row of fb.levels) {
    const lo = i;
    let e1 = 0;
    let e2 = 0;
    let p = prevLo;
    for (let j = 0; j < row.length; j += step) {
      const s1 = e1 + row[j];
      e1 = s1 + row[j + 1];
      let s = s1;
      if (double) {
        const s2 = e2 + row[j + 3];
        e2 = s2 + row[j + 4];
        s += s2;
        base[i] = row[j + 1];
        baseSelf[i] = row[j + 2];
        total[i] = row[j + 4];
        self[i] = row[j + 5];
        name[i] = row[j + 6];
        end[i] = s + row[j + 1] + row[j + 4];
      } else {
        total[i] = row[j + 1];
        self[i] = row[j + 2];
        name[i] = row[j + 3];
        end[i] = s + row[j + 1];
      }
      start[i] = s;
      if (i === 0) {
        parent[i] = -1;
      } else {
        while (p < prevHi - 1 && end[p] <= s) p++;
        parent[i] = p;
      }
      i++;
    }
    prevLo = lo;
    prevHi = i;
  }
  return new FlameTree({ names: fb.names, name, parent, total, self, base, baseSelf });
}

// TreeBuilder builds a FlameTree node by node: child finds or adds a
// callee, add puts a value on a node's self. finish adds the totals up,
// orders each node's children by name, as the server does, and numbers
// the nodes level by level.
export class TreeBuilder {
  constructor(names, diff = false) {
    this.names = names;
    this.diff = diff;
    this.nodeName = [0];
    this.nodeParent = [-1];
    this.self = [0];
    this.baseSelf = diff ? [0] : null;
    this.kids = [null]; // per node: Map name → child, made on first use
  }

  // child returns the child of p named by name index nameIdx, adding it.
  child(p, nameIdx) {
    let m = this.kids[p];
    if (!m) m = this.kids[p] = new Map();
    let c = m.get(nameIdx);
    if (c === undefined) {
      c = this.nodeName.length;
      this.nodeName.push(nameIdx);
      this.nodeParent.push(p);
      this.self.push(0);
      if (this.diff) this.baseSelf.push(0);
      this.kids.push(null);
      m.set(nameIdx, c);
    }
    return c;
  }

  // add adds v to node i's self value, or its baseline's when base is set.
  add(i, v, base = false) {
    if (base) this.baseSelf[i] += v;
    else this.self[i] += v;
  }

  // finish returns the tree, the root named by rootName (an index into
  // names).
  finish(rootName) {
    const count = this.nodeName.length;
    const tot = Float64Array.from(this.self);
    const btot = this.diff ? Float64Array.from(this.baseSelf) : null;
    // children are added after their parents: add totals up backwards
    for (let i = count - 1; i > 0; i--) {
      tot[this.nodeParent[i]] += tot[i];
      if (btot) btot[this.nodeParent[i]] += btot[i];
    }
    const order = [0];
    for (let k = 0; k < order.length; k++) {
      const m = this.kids[order[k]];
      if (!m) continue;
      const cs = [...m.values()].filter((c) => tot[c] > 0 || (btot && btot[c] > 0));
      cs.sort((a, b) => cmp(this.names[this.nodeName[a]], this.names[this.nodeName[b]]));
      for (const c of cs) order.push(c);
    }
    const n = order.length;
    const id = new Int32Array(count).fill(-1);
    order.forEach((old, i) => {
      id[old] = i;
    });
    const name = new Int32Array(n);
    const parent = new Int32Array(n);
    const total = new Float64Array(n);
    const self = new Float64Array(n);
    const base = btot ? new Float64Array(n) : null;
    const baseSelf = btot ? new Float64Array(n) : null;
    order.forEach((old, i) => {
      name[i] = old === 0 ? rootName : this.nodeName[old];
      parent[i] = old === 0 ? -1 : id[this.nodeParent[old]];
      total[i] = tot[old];
      self[i] = this.self[old];
      if (btot) {
        base[i] = btot[old];
        baseSelf[i] = this.baseSelf[old];
      }
    });
    return new FlameTree({ names: this.names, name, parent, total, self, base, baseSelf });
  }
}

function cmp(a, b) {
  return a < b ? -1 : a > b ? 1 : 0;
}

// nameIndex returns a function giving a name's index in names, adding it.
export function nameIndex(names) {
  const m = new Map(names.map((s, i) => [s, i]));
  return (s) => {
    let i = m.get(s);
    if (i === undefined) {
      i = names.length;
      names.push(s);
      m.set(s, i);
    }
    return i;
  };
}
