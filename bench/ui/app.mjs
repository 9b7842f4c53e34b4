// Measures the web UI's pages of a large application in headless
// Chromium: the app page from navigation until its timeline has drawn
// every task, and, where the server has stage pages, a stage's page from
// navigation until its task table shows, a sort of its task table by
// duration and the next page. The app must be imported already (see
// BENCHMARKS.md, "Web UI"). Give two servers (two builds) to measure them
// side by side, alternating.
//
//   node bench/ui/app.mjs APP STAGE [runs=3] URL [URL2]
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../ui/package.json'));
const { chromium } = require('playwright-core');

const [app, stage, runsArg, ...bases] = process.argv.slice(2);
const runs = Number(runsArg || 3);
if (!app || bases.length === 0) throw new Error('usage: node bench/ui/app.mjs APP STAGE runs URL [URL2]');

const info = await (await fetch(`${bases[0]}/api/v1/apps`)).json();
const tasks = info.find((a) => a.id === app)?.taskCount;
if (!tasks) throw new Error(`${bases[0]} has no app ${app}`);
console.log(`app ${app}: ${tasks.toLocaleString('en')} tasks`);

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
});
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const table = (p) => p.waitForFunction(() => document.querySelector('[data-testid="task-table"]')?.dataset);

// measure runs one round against base: each measure in ms.
async function measure(base) {
  const out = {};
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  page.setDefaultTimeout(120000);
  let t = Date.now();
  await page.goto(`${base}/#/apps/${encodeURIComponent(app)}`);
  await page.waitForFunction((n) => document.querySelector('canvas[data-testid="timeline"]')?.dataset.tasks === String(n), tasks, { timeout: 120000 });
  out.app = Date.now() - t;
  const stages = (await fetch(`${base}/api/v1/apps/${encodeURIComponent(app)}/stages/${stage}`)).ok;
  if (stages) {
    t = Date.now();
    await page.goto(`${base}/#/apps/${encodeURIComponent(app)}/stages/${stage}`);
    await table(page);
    out.stage = Date.now() - t;
    t = Date.now();
    await page.getByTestId('task-table').locator('th', { hasText: 'Duration' }).click();
    await page.waitForFunction(() => document.querySelector('[data-testid="task-table"]').dataset.sort === 'duration desc');
    out.sort = Date.now() - t;
    t = Date.now();
    await page.getByTestId('task-next').click();
    await page.waitForFunction(() => document.querySelector('[data-testid="task-table"]').dataset.page === '1');
    out.next = Date.now() - t;
  }
  await page.close();
  return out;
}

const results = bases.map(() => ({}));
try {
  for (let r = 0; r < runs; r++) {
    for (const [i, base] of bases.entries()) {
      const m = await measure(base);
      for (const [k, v] of Object.entries(m)) (results[i][k] ||= []).push(v);
    }
  }
} finally {
  await browser.close();
}
const names = {
  app: 'app page, navigation → timeline of every task drawn',
  stage: `stage ${stage}'s page, navigation → task table`,
  sort: 'task table sorted by duration',
  next: 'its next page',
};
for (const [k, title] of Object.entries(names)) {
  const cols = results.map((res) => (res[k] ? `median ${median(res[k])} ms (${res[k].join(', ')})` : '–'));
  const ratio = bases.length === 2 && results[0][k] && results[1][k] ? `; ratio ${(median(results[1][k]) / median(results[0][k])).toFixed(2)}` : '';
  console.log(`${title}: ${cols.join(' | ')}${ratio}`);
}
