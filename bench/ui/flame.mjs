// Measures the web UI's flame graph on a large profile in headless
// Chromium: a generated folded profile with N distinct call-tree nodes is
// imported into a running `sparkprof serve`, then, in a new page each run,
// the time from navigation to the flame graph's first frame (the page asks
// for at most 16,384 frames, the rest folded), to the first frame of every
// frame ("show all frames"), to zoom into a frame and to highlight a
// search; beside it, the server's self-contained HTML flame graph (/flame)
// of the same selection, every frame. Give two servers (two builds) to
// measure them side by side, alternating, in the same browser.
//
//   [FOLDED=big.folded.gz] node bench/ui/flame.mjs [nodes=55000] [runs=5] URL [URL2]
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

const require = createRequire(path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../ui/package.json'));
const { chromium } = require('playwright-core');

const nodes = Number(process.argv[2] || 55000);
const runs = Number(process.argv[3] || 5);
const bases = process.argv.slice(4);
if (bases.length === 0) throw new Error('usage: node bench/ui/flame.mjs nodes runs URL [URL2]');

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

// FOLDED names a gzipped folded profile to use instead, such as
// bench/bigprofile's (the servers then need --ingest-memory 4GiB).
const file = process.env.FOLDED;
const app = file ? `bench-flame-${path.basename(file).replace(/\W/g, '-')}` : `bench-flame-${nodes}`;
const body = file ? fs.readFileSync(file) : folded(nodes);
const headers = file ? { 'Content-Encoding': 'gzip' } : {};
for (const base of bases) {
  const resp = await fetch(`${base}/api/v1/import?path=${app}.folded&app=${app}&kind=profile&format=folded`, { method: 'POST', body, headers });
  if (!resp.ok) throw new Error(`import into ${base}: ${resp.status} ${await resp.text()}`);
}
const render = await (await fetch(`${bases[0]}/api/v1/render?query=${encodeURIComponent(`{service_name="${app}"}`)}&type=samples&maxNodes=0`)).json();
let treeNodes = 0;
for (const level of render.flamebearer.levels) treeNodes += level.length / 4;
console.log(`profile: ${file ? file : `${body.split('\n').length - 1} stacks`}, ${treeNodes} call-tree nodes, ${render.flamebearer.names.length} names`);

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
});
const frame = (page) => page.waitForFunction(() => new Promise((res) => requestAnimationFrame(() => res(true))));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const sel = encodeURIComponent(`{service_name="${app}"}`);

// measure runs one round against base: each measure in ms.
async function measure(base) {
  const out = {};
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  let t = Date.now();
  await page.goto(`${base}/#/flame?query=${sel}`);
  await page.getByTestId('flamegraph-canvas').first().waitFor();
  await frame(page);
  out.first = Date.now() - t;
  const box = await page.getByTestId('flamegraph-canvas').first().boundingBox();
  t = Date.now();
  await page.mouse.click(box.x + box.width * 0.3, box.y + 60);
  await frame(page);
  out.zoom = Date.now() - t;
  t = Date.now();
  await page.getByTestId('flame').locator('input[type="search"]').fill('Class7.method1');
  await frame(page);
  out.search = Date.now() - t;
  t = Date.now();
  await page.getByRole('button', { name: 'show all frames' }).click();
  await page.getByTestId('frames-folded').waitFor({ state: 'detached' });
  await page.getByTestId('flamegraph-canvas').first().waitFor();
  await frame(page);
  out.all = Date.now() - t;
  await page.close();
  const p2 = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  t = Date.now();
  await p2.goto(`${base}/flame?query=${sel}&type=samples`);
  await p2.locator('canvas').first().waitFor();
  await frame(p2);
  out.html = Date.now() - t;
  await p2.close();
  return out;
}

const results = bases.map(() => ({ first: [], zoom: [], search: [], all: [], html: [] }));
try {
  for (let r = 0; r < runs; r++) {
    for (const [i, base] of bases.entries()) {
      const m = await measure(base);
      for (const k of Object.keys(m)) results[i][k].push(m[k]);
    }
  }
} finally {
  await browser.close();
}
const names = {
  first: 'flame graph page, navigation → first frame (16,384 frames, the rest folded)',
  all: '"show all frames" → first frame of every frame',
  zoom: 'zoom into a frame',
  search: 'search highlight',
  html: 'server HTML flame graph (/flame), navigation → first frame',
};
for (const [k, title] of Object.entries(names)) {
  const cols = results.map((res) => `median ${median(res[k])} ms (${res[k].join(', ')})`);
  const ratio = bases.length === 2 ? `; ratio ${(median(results[1][k]) / median(results[0][k])).toFixed(2)}` : '';
  console.log(`${title}: ${cols.join(' | ')}${ratio}`);
}
