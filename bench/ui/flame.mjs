// Measures the web UI's flame graph on a large profile in headless
// Chromium: a generated folded profile with N distinct call-tree nodes is
// imported into a running `sparkprof serve`, then the time to fetch and
// draw it, to zoom into a frame and to search is measured, beside the
// server's self-contained HTML flame graph (/flame) of the same selection.
//
//   node bench/ui/flame.mjs http://127.0.0.1:4040 [nodes=60000] [runs=3]
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../ui/package.json'));
const { chromium } = require('playwright-core');

const base = process.argv[2] || 'http://127.0.0.1:4040';
const nodes = Number(process.argv[3] || 60000);
const runs = Number(process.argv[4] || 3);

// folded builds stacks until the call tree has n nodes (distinct
// root-to-frame paths).
function folded(n) {
  const lines = [];
  const seen = new Set();
  for (let i = 0; seen.size < n; i++) {
    const depth = 4 + (i % 12);
    const frames = [];
    for (let d = 0; d < depth; d++) {
      frames.push(`com.example.pkg${d}.Class${(i >> d) % 37}.method${(i * 7 + d) % 53}`);
      seen.add(frames.join(';'));
    }
    lines.push(`${frames.join(';')} ${1 + (i % 97)}`);
  }
  return lines.join('\n') + '\n';
}

const app = `bench-flame-${nodes}`;
const body = folded(nodes);
let resp = await fetch(`${base}/api/v1/import?path=${app}.folded&app=${app}&kind=profile&format=folded`, { method: 'POST', body });
if (!resp.ok) throw new Error(`import: ${resp.status} ${await resp.text()}`);
const render = await (await fetch(`${base}/api/v1/render?query=${encodeURIComponent(`{service_name="${app}"}`)}&type=samples`)).json();
let treeNodes = 0;
for (const level of render.flamebearer.levels) treeNodes += level.length / 4;
console.log(`profile: ${body.split('\n').length - 1} stacks, ${treeNodes} call-tree nodes, ${render.flamebearer.names.length} names`);

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
});
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const results = { ui: [], zoom: [], search: [], html: [] };
try {
  for (let r = 0; r < runs; r++) {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const sel = encodeURIComponent(`{service_name="${app}"}`);
    let t = Date.now();
    await page.goto(`${base}/#/flame?query=${sel}`);
    await page.getByTestId('flamegraph-canvas').waitFor();
    await page.waitForFunction(() => new Promise((res) => requestAnimationFrame(() => res(true))));
    results.ui.push(Date.now() - t);
    const box = await page.getByTestId('flamegraph-canvas').boundingBox();
    t = Date.now();
    await page.mouse.click(box.x + box.width * 0.3, box.y + 60);
    await page.waitForFunction(() => new Promise((res) => requestAnimationFrame(() => res(true))));
    results.zoom.push(Date.now() - t);
    t = Date.now();
    await page.getByTestId('flame').locator('input[type="search"]').fill('Class7.method1');
    await page.waitForFunction(() => new Promise((res) => requestAnimationFrame(() => res(true))));
    results.search.push(Date.now() - t);
    await page.close();
    const p2 = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    t = Date.now();
    await p2.goto(`${base}/flame?query=${sel}&type=samples`);
    await p2.locator('canvas').first().waitFor();
    await p2.waitForFunction(() => new Promise((res) => requestAnimationFrame(() => res(true))));
    results.html.push(Date.now() - t);
    await p2.close();
  }
} finally {
  await browser.close();
}
console.log(`UI flame graph page, load to first frame: median ${median(results.ui)} ms (${results.ui.join(', ')})`);
console.log(`UI zoom into a frame: median ${median(results.zoom)} ms (${results.zoom.join(', ')})`);
console.log(`UI search highlight: median ${median(results.search)} ms (${results.search.join(', ')})`);
console.log(`server HTML flame graph (/flame), load to first frame: median ${median(results.html)} ms (${results.html.join(', ')})`);
console.log(`ratio UI / HTML page: ${(median(results.ui) / median(results.html)).toFixed(2)}`);
