// End-to-end test of the web UI in a real browser: Debian's chromium,
// headless, driven by playwright-core. It starts `sparkprof serve`
// preloaded with the real sample data, walks the pages a user would (steps/),
// and fails on any console error. Screenshots go to $SCREENSHOTS (default
// ../out/ui-e2e).
//
//   node e2e/e2e.mjs [path/to/sparkprof] [testdata dir]
import { chromium } from 'playwright-core';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startServer } from './lib.mjs';
import * as app from './steps/app.mjs';
import * as history from './steps/history.mjs';
import * as numbers from './steps/numbers.mjs';
import * as deadends from './steps/deadends.mjs';
import * as sql from './steps/sql.mjs';
import * as flame from './steps/flame.mjs';
import * as server from './steps/server.mjs';
import * as runs from './steps/runs.mjs';

const here = path.dirname(new URL(import.meta.url).pathname);
const bin = path.resolve(process.argv[2] || path.join(here, '../../bin/sparkprof'));
const testdata = path.resolve(process.argv[3] || path.join(here, '../../../shared/testdata'));
const shots = path.resolve(process.env.SCREENSHOTS || path.join(here, '../../out/ui-e2e'));
const browserPath = process.env.CHROMIUM || '/usr/bin/chromium';
mkdirSync(shots, { recursive: true });

// The sample data `make demo` preloads: its --preload arguments.
const demoPreload = execFileSync(path.join(here, '../../scripts/demo-preload.sh'), [testdata], { encoding: 'utf8' })
  .split('\n')
  .filter(Boolean);

const steps = [];
// failed is called with a step's error before it ends the run: it says
// where the page was and keeps a screenshot of it.
let failed = async () => {};
async function step(name, fn) {
  const t = Date.now();
  try {
    await fn();
  } catch (e) {
    console.log(`FAIL ${name} (${Date.now() - t} ms)`);
    await failed(name);
    throw e;
  }
  steps.push(`${name}: ${Date.now() - t} ms`);
  console.log(`ok   ${name} (${Date.now() - t} ms)`);
}

const srv = await startServer(bin, demoPreload);
// Chromium leaves directories of its own (org.chromium.Chromium.*) in its
// temporary directory: it gets one of the test's, removed at the end.
const browserTmp = mkdtempSync(path.join(tmpdir(), 'sparkprof-e2e-browser-'));
const browser = await chromium.launch({
  executablePath: browserPath,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  env: { ...process.env, TMPDIR: browserTmp },
});
const errors = [];
try {
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 }, acceptDownloads: true });
  const page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
  // A wait is for the page's own signal; the bound is only for a page that
  // never gives it, and a busy machine must not reach it.
  context.setDefaultTimeout(Number(process.env.E2E_TIMEOUT_MS) || 5 * 60_000);
  failed = async () => {
    console.log(`     the page was at ${page.url()}; console errors: ${JSON.stringify(errors)}`);
    await page.screenshot({ path: path.join(shots, 'failed.png'), fullPage: true }).catch(() => {});
  };
  // shot keeps a screenshot of the page, whole or of one element.
  const shot = (name, locator) => (locator ? locator.first().screenshot({ path: path.join(shots, name) }) : page.screenshot({ path: path.join(shots, name), fullPage: true }));
  const t = { page, context, browser, step, shot, shots, url: srv.url, bin, testdata, errors, startServer: (extra) => startServer(bin, extra) };
  // E2E_STEPS=app,flame runs only those files of steps (each starts from
  // a page of its own): while working on one part of the UI.
  const only = process.env.E2E_STEPS ? process.env.E2E_STEPS.split(',') : null;
  const files = { app, numbers, deadends, sql, flame, server, runs, history };
  for (const [name, steps] of Object.entries(files)) {
    // history goes last: it imports a generated app of 222,880 tasks under
    // the id of a corpus app the steps before read.
    if (!only || only.includes(name)) await steps.run(t);
  }
} finally {
  await browser.close();
  srv.stop();
  rmSync(browserTmp, { recursive: true, force: true });
}
if (errors.length > 0) {
  console.error(`FAIL: ${errors.length} browser errors:\n${errors.join('\n')}`);
  process.exit(1);
}
console.log(`PASS: ${steps.length} steps; screenshots in ${shots}`);
