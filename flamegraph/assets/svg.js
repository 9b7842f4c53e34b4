// Zoom and search for sparkprof's SVG flame graphs. Hand-written: the SVG
// must work offline as one file, so it cannot load a library.
"use strict";
(function () {
  var svg = document.documentElement;
  var frames = Array.prototype.slice.call(document.querySelectorAll("g.f"));
  var width = +svg.getAttribute("data-width");
  var pad = +svg.getAttribute("data-pad");
  var matchedText = document.getElementById("matched");

  function attr(g, name) { return +g.getAttribute("data-" + name); }

  function place(g, x, w) {
    var r = g.querySelector("rect"), t = g.querySelector("text");
    if (w <= 0) { g.style.display = "none"; return; }
    g.style.display = "";
    r.setAttribute("x", x); r.setAttribute("width", w);
    t.setAttribute("x", x + 3);
    var name = g.getAttribute("data-name");
    var fit = Math.floor((w - 6) / 7);
    t.textContent = fit < 3 ? "" : (name.length <= fit ? name : name.slice(0, fit - 2) + "..");
  }

  function zoom(target) {
    var x0 = attr(target, "x0"), x1 = attr(target, "x1"), depth = attr(target, "depth");
    var scale = (width - 2 * pad) / (x1 - x0);
    frames.forEach(function (g) {
      var a = attr(g, "x0"), b = attr(g, "x1"), d = attr(g, "depth");
      var inside = a >= x0 && b <= x1 && d >= depth;
      var ancestor = a <= x0 && b >= x1 && d < depth;
      if (inside) place(g, pad + (a - x0) * scale, (b - a) * scale);
      else if (ancestor) place(g, pad, width - 2 * pad);
      else place(g, 0, 0);
      g.style.opacity = ancestor ? "0.5" : "";
    });
  }

  function reset() { frames.forEach(function (g) {
    place(g, pad + attr(g, "x0"), attr(g, "x1") - attr(g, "x0"));
    g.style.opacity = "";
  }); }

  function search(pattern) {
    var re;
    try { re = new RegExp(pattern); } catch (e) { return; }
    var total = 0, spans = [];
    frames.forEach(function (g) {
      var r = g.querySelector("rect");
      if (!r.hasAttribute("data-fill")) r.setAttribute("data-fill", r.getAttribute("fill"));
      if (pattern && re.test(g.getAttribute("data-name"))) {
        r.setAttribute("fill", "rgb(230,0,230)");
        spans.push([attr(g, "x0"), attr(g, "x1")]);
      } else {
        r.setAttribute("fill", r.getAttribute("data-fill"));
      }
    });
    // Count each x range once: a match inside another match adds nothing.
    spans.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });
    var end = -1;
    spans.forEach(function (s) {
      if (s[0] >= end) { total += s[1] - s[0]; end = s[1]; }
      else if (s[1] > end) { total += s[1] - end; end = s[1]; }
    });
    var all = width - 2 * pad;
    matchedText.textContent = pattern ? "Matched: " + (100 * total / all).toFixed(1) + "%" : "";
  }

  frames.forEach(function (g) { g.addEventListener("click", function () { zoom(g); }); });
  document.getElementById("reset").addEventListener("click", reset);
  document.getElementById("search").addEventListener("click", function () {
    search(window.prompt("Search (regular expression)", "") || "");
  });
  window.addEventListener("keydown", function (e) {
    if ((e.ctrlKey || e.metaKey) && e.key === "f") {
      e.preventDefault();
      search(window.prompt("Search (regular expression)", "") || "");
    }
  });
})();
