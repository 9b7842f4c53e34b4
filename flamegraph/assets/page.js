// Interactive flame graph page of sparkprof. Hand-written without a
// framework: the page must be one offline file. It reads the compact
// profile encoding written by flamegraph.HTML, filters samples, builds the
// call tree and draws it on a canvas.
"use strict";
(function () {
  var D = JSON.parse(document.getElementById("data").textContent);
  var W = 6; // integers per sample row
  var ROW = 18; // frame height in CSS pixels
  var diff = D.base !== null;
  var $ = function (id) { return document.getElementById(id); };
  var canvas = $("flame"), ctx = canvas.getContext("2d"), tip = $("tip");
  var state = { full: null, root: null, focus: null, search: null, rects: [], sort: "total", fn: null };

  $("title").textContent = D.title;

  function fill(select, values, label) {
    values.forEach(function (v, i) {
      var o = document.createElement("option");
      o.value = i; o.textContent = label(v, i);
      select.appendChild(o);
    });
  }
  fill($("type"), D.types, function (v) { return v; });
  $("type").value = D.type;
  fill($("pool"), D.pools, function (v, i) { return i === 0 ? "all" : v; });
  fill($("stage"), D.stages, function (v, i) { return i === 0 ? "all" : v; });

  function unit() { return D.types.length ? D.types[+$("type").value].split(":")[1] : "count"; }

  // fmt renders v in the current type's unit for people.
  function fmt(v) {
    var u = unit(), a = Math.abs(v);
    if (u === "nanoseconds") {
      if (a >= 1e9) return (v / 1e9).toFixed(2) + " s";
      if (a >= 1e6) return (v / 1e6).toFixed(2) + " ms";
      if (a >= 1e3) return (v / 1e3).toFixed(2) + " µs";
      return v + " ns";
    }
    if (u === "bytes") {
      if (a >= 1 << 30) return (v / (1 << 30)).toFixed(2) + " GiB";
      if (a >= 1 << 20) return (v / (1 << 20)).toFixed(2) + " MiB";
      if (a >= 1 << 10) return (v / (1 << 10)).toFixed(2) + " KiB";
      return v + " B";
    }
    return v.toLocaleString("en-US");
  }

  function pct(v, total) { return total ? (100 * v / total).toFixed(2) + "%" : "0%"; }

  function node(name, kind, parent) {
    return { name: name, kind: kind, self: 0, total: 0, bself: 0, btotal: 0, children: [], byName: {}, parent: parent };
  }

  // build returns the call tree of the samples passing the filters.
  function build() {
    var type = +$("type").value, pool = +$("pool").value, stage = +$("stage").value;
    var re = null, threadOK = [];
    try { if ($("thread").value) re = new RegExp($("thread").value); } catch (e) { re = null; }
    D.threads.forEach(function (t, i) { threadOK[i] = !re || re.test(t); });
    var nstacks = D.stacks.length / 2 + 1;
    var nodes = new Array(nstacks);
    var root = node("total", 0, null);
    nodes[0] = root;
    function nodeOf(s) {
      if (nodes[s]) return nodes[s];
      var parent = nodeOf(D.stacks[2 * (s - 1)]), f = D.stacks[2 * (s - 1) + 1];
      var name = D.frames[f], n = parent.byName[name];
      if (!n) {
        n = node(name, D.kinds[f], parent);
        parent.byName[name] = n;
        parent.children.push(n);
      }
      return (nodes[s] = n);
    }
    function add(rows, base) {
      if (!rows) return;
      for (var i = 0; i < rows.length; i += W) {
        if (rows[i + 1] !== type || (pool && rows[i + 2] !== pool) ||
            (stage && rows[i + 3] !== stage) || !threadOK[rows[i + 4]]) continue;
        var n = nodeOf(rows[i]);
        if (base) n.bself += rows[i + 5]; else n.self += rows[i + 5];
      }
    }
    add(D.base, true);
    add(D.samples, false);
    (function finish(n) {
      n.total = n.self; n.btotal = n.bself;
      n.children.sort(function (a, b) { return a.name < b.name ? -1 : a.name > b.name ? 1 : 0; });
      n.children.forEach(function (c) { finish(c); n.total += c.total; n.btotal += c.btotal; });
    })(root);
    root.scale = root.btotal && root.total ? root.total / root.btotal : 1;
    return root;
  }

  // size is the width-bearing value of n; in a diff also the normalised
  // baseline, so that frames that shrank or vanished stay visible.
  function size(n) { return diff ? Math.max(n.total, n.btotal * state.root.scale) : n.total; }

  function hash(s) {
    var h = 2166136261;
    for (var i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); }
    return ((h >>> 0) % 1000) / 1000;
  }

  var KIND_HUES = [[180, 180, 170], [50, 180, 50], [230, 140, 40], [210, 70, 50], [70, 140, 220]];
  function colour(n) {
    if (state.search && state.search(n.name)) return "rgb(230,0,230)";
    if (diff) {
      var base = n.btotal * state.root.scale, d = n.total - base, m = Math.max(n.total, base);
      if (m > 0) d /= m;
      var c = Math.round(255 - 200 * Math.abs(d));
      return d > 0 ? "rgb(255," + c + "," + c + ")" : d < 0 ? "rgb(" + c + "," + c + ",255)" : "rgb(255,255,255)";
    }
    var k = KIND_HUES[n.kind] || KIND_HUES[0], v = hash(n.name);
    return "rgb(" + Math.round(k[0] + 40 * v) + "," + Math.round(k[1] + 40 * v) + "," + Math.round(k[2] + 30 * v) + ")";
  }

  function depthOf(n) { var d = 0; for (; n.parent; n = n.parent) d++; return d; }

  // draw lays out the tree (root on top) from the focused node and paints it.
  function draw() {
    var root = state.root, focus = state.focus || root;
    var width = canvas.clientWidth, fd = depthOf(focus), maxDepth = 0, rects = [];
    var scale = size(focus) ? width / size(focus) : 0;
    for (var a = focus.parent, d = fd - 1; a; a = a.parent, d--) rects.push({ n: a, x: 0, w: width, d: d, anc: true });
    (function lay(n, x, d) {
      var w = size(n) * scale;
      if (w < 0.3) return;
      rects.push({ n: n, x: x, w: w, d: d });
      if (d > maxDepth) maxDepth = d;
      n.children.forEach(function (c) { lay(c, x, d + 1); x += size(c) * scale; });
    })(focus, 0, fd);
    var dpr = window.devicePixelRatio || 1, height = (maxDepth + 1) * ROW;
    canvas.style.height = height + "px";
    canvas.width = Math.round(width * dpr); canvas.height = Math.round(height * dpr);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.font = "12px Verdana, sans-serif";
    ctx.textBaseline = "middle";
    rects.forEach(function (r) {
      var y = r.d * ROW;
      ctx.globalAlpha = r.anc ? 0.6 : 1;
      ctx.fillStyle = colour(r.n);
      ctx.fillRect(r.x, y, Math.max(r.w - 0.5, 0.5), ROW - 1);
      if (r.w > 30) {
        ctx.fillStyle = "#000";
        var fit = Math.floor((r.w - 6) / 7), name = r.n.name;
        ctx.fillText(name.length <= fit ? name : name.slice(0, fit - 2) + "..", r.x + 3, y + ROW / 2);
      }
    });
    ctx.globalAlpha = 1;
    state.rects = rects;
    crumbs(focus);
  }

  function crumbs(focus) {
    var el = $("crumbs"), path = [];
    for (var n = focus; n; n = n.parent) path.unshift(n);
    el.textContent = "";
    path.forEach(function (n) {
      var a = document.createElement("a");
      a.textContent = n.name.length > 40 ? n.name.slice(0, 38) + ".." : n.name;
      a.addEventListener("click", function () { state.focus = n; draw(); });
      el.appendChild(a);
      el.appendChild(document.createTextNode(" › "));
    });
  }

  // matched sums the totals of matching frames, counting a match inside
  // another match once.
  function matched() {
    if (!state.search) { $("matched").textContent = ""; return; }
    var sum = 0;
    (function walk(n) {
      if (n.parent && state.search(n.name)) { sum += n.total; return; }
      n.children.forEach(walk);
    })(state.full);
    $("matched").textContent = "Matched: " + pct(sum, state.full.total) + " of total";
    $("matched").setAttribute("data-value", sum);
  }

  function setSearch(text) {
    $("search").value = text;
    if (!text) state.search = null;
    else {
      var re = null;
      try { re = new RegExp(text); } catch (e) { re = null; }
      state.search = re ? function (s) { return re.test(s); } : function (s) { return s.indexOf(text) >= 0; };
    }
    matched(); draw();
  }

  // top fills the table of functions by self and total; a function that
  // recurses counts once in total.
  function top() {
    var stats = {}, onPath = {};
    (function walk(n) {
      var s = stats[n.name] || (stats[n.name] = { name: n.name, self: 0, total: 0 });
      s.self += n.self;
      if (!onPath[n.name]) s.total += n.total;
      onPath[n.name] = (onPath[n.name] || 0) + 1;
      n.children.forEach(walk);
      onPath[n.name]--;
    })(state.full);
    delete stats.total;
    var rows = Object.keys(stats).map(function (k) { return stats[k]; });
    var key = state.sort === "selfp" ? "self" : state.sort === "totalp" ? "total" : state.sort;
    rows.sort(function (a, b) { return key === "name" ? (a.name < b.name ? -1 : 1) : b[key] - a[key]; });
    var body = document.querySelector("#top tbody"), all = state.full.total;
    body.textContent = "";
    rows.slice(0, 200).forEach(function (s) {
      var tr = document.createElement("tr");
      [s.name, fmt(s.self), pct(s.self, all), fmt(s.total), pct(s.total, all)].forEach(function (v) {
        var td = document.createElement("td"); td.textContent = v; tr.appendChild(td);
      });
      tr.addEventListener("click", function () {
        state.fn = s.name;
        setSearch(s.name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
        if ($("view").value !== "flame") view();
      });
      body.appendChild(tr);
    });
  }

  // merge adds the subtree of n into the children of dst.
  function merge(dst, n) {
    var c = dst.byName[n.name];
    if (!c) { c = node(n.name, n.kind, dst); dst.byName[n.name] = c; dst.children.push(c); }
    c.self += n.self; c.total += n.total; c.bself += n.bself; c.btotal += n.btotal;
    n.children.forEach(function (k) { merge(c, k); });
  }

  // sandwich returns the callees tree (calls made below fn, outermost
  // calls of fn only) or the callers tree (call paths into fn, fn on top,
  // its callers below) of the full tree.
  function sandwich(full, fn, callers) {
    var root = node(fn, 0, null);
    (function walk(n) {
      if (n.parent && n.name === fn) {
        root.kind = n.kind;
        root.total += n.total; root.btotal += n.btotal; root.self += n.self; root.bself += n.bself;
        if (callers) {
          var dst = root;
          for (var a = n.parent; a && a.parent; a = a.parent) {
            var c = dst.byName[a.name];
            if (!c) { c = node(a.name, a.kind, dst); dst.byName[a.name] = c; dst.children.push(c); }
            c.total += n.total; c.btotal += n.btotal;
            dst = c;
          }
        } else {
          n.children.forEach(function (k) { merge(root, k); });
        }
        return;
      }
      n.children.forEach(walk);
    })(full);
    root.scale = full.scale;
    return root;
  }

  function view() {
    var v = $("view").value;
    state.root = v === "flame" || !state.fn ? state.full : sandwich(state.full, state.fn, v === "callers");
    state.focus = null;
    document.body.setAttribute("data-view-total", state.root.total);
    draw();
  }

  function rebuild() {
    state.full = state.root = build(); state.focus = null;
    document.body.setAttribute("data-total", state.full.total);
    setSearch($("search").value);
    top();
    view();
  }

  function hit(ev) {
    var b = canvas.getBoundingClientRect(), x = ev.clientX - b.left, y = ev.clientY - b.top;
    var d = Math.floor(y / ROW);
    for (var i = 0; i < state.rects.length; i++) {
      var r = state.rects[i];
      if (r.d === d && x >= r.x && x < r.x + r.w) return r.n;
    }
    return null;
  }

  canvas.addEventListener("click", function (ev) {
    var n = hit(ev);
    if (!n) return;
    if (ev.shiftKey) { state.fn = n.name; $("view").value = "callers"; view(); return; }
    state.focus = n; draw();
  });
  canvas.addEventListener("mousemove", function (ev) {
    var n = hit(ev);
    if (!n) { tip.hidden = true; return; }
    var all = state.root.total, lines = [n.name,
      "total " + fmt(n.total) + " (" + pct(n.total, all) + "), self " + fmt(n.self) + " (" + pct(n.self, all) + ")"];
    if (diff) {
      var base = n.btotal * state.root.scale;
      lines.push("before " + fmt(n.btotal) + ", after " + fmt(n.total) + ", Δ " +
        (base ? ((n.total - base) / base * 100).toFixed(1) + "%" : "new"));
    }
    tip.textContent = "";
    lines.forEach(function (l, i) {
      if (i) tip.appendChild(document.createElement("br"));
      tip.appendChild(document.createTextNode(l));
    });
    tip.hidden = false;
    tip.style.left = ev.clientX + 12 + "px"; tip.style.top = ev.clientY + 12 + "px";
  });
  canvas.addEventListener("mouseleave", function () { tip.hidden = true; });
  $("reset").addEventListener("click", function () { state.focus = null; draw(); });
  $("view").addEventListener("change", view);
  ["type", "pool", "stage"].forEach(function (id) { $(id).addEventListener("change", rebuild); });
  $("thread").addEventListener("input", rebuild);
  $("search").addEventListener("input", function () { setSearch($("search").value); });
  document.querySelectorAll("#top th").forEach(function (th) {
    th.addEventListener("click", function () { state.sort = th.getAttribute("data-k"); top(); });
  });
  window.addEventListener("keydown", function (e) {
    if ((e.ctrlKey || e.metaKey) && e.key === "f") { e.preventDefault(); $("search").focus(); }
  });
  window.addEventListener("resize", draw);
  rebuild();
})();
