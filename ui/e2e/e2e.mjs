// End-to-end test of the web UI in a real browser: Debian's chromium,
// headless, driven by playwright-core. It starts `sparkprof serve`
// preloaded with the real sample data, walks the pages a user would, and
// fails on any console error. Screenshots go to $SCREENSHOTS (default
// ../out/ui-e2e).
//
//   node e2e/e2e.mjs [path/to/sparkprof] [testdata dir]
import { chromium } from 'playwright-core';
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';

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

// startServer runs sparkprof serve on a free port and resolves with its
// URL once it is ready (preloading done), however long a busy machine
// takes: it waits for the server's own signals, or its exit.
async function startServer(extra = demoPreload) {
  const data = mkdtempSync(path.join(tmpdir(), 'sparkprof-e2e-'));
  const proc = spawn(bin, ['serve', '--addr', '127.0.0.1:0', '--data', data, ...extra], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  let exited = null;
  const url = await new Promise((resolve, reject) => {
    proc.stderr.on('data', (b) => {
      log += b;
      const m = log.match(/listening on (http:\/\/[\d.:]+)/);
      if (m) resolve(m[1]);
    });
    proc.on('exit', (code) => {
      exited = new Error(`server exited ${code}:\n${log}`);
      reject(exited);
    });
  });
  for (;;) {
    if (exited) throw exited;
    const r = await fetch(`${url}/ready`).catch(() => null);
    if (r && r.status === 200) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    stop: () => {
      proc.kill('SIGTERM');
      rmSync(data, { recursive: true, force: true });
    },
  };
}

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

const server = await startServer();
const browser = await chromium.launch({
  executablePath: browserPath,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
});
const errors = [];
try {
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 }, acceptDownloads: true });
  const page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
  page.setDefaultTimeout(30000);
  failed = async (name) => {
    console.log(`     the page was at ${page.url()}; console errors: ${JSON.stringify(errors)}`);
    await page.screenshot({ path: path.join(shots, 'failed.png'), fullPage: true }).catch(() => {});
  };

  await step('apps page lists the preloaded applications', async () => {
    await page.goto(`${server.url}/`);
    const table = page.getByTestId('apps');
    await table.getByText('Profile Straggler').waitFor();
    const rows = await table.locator('tbody tr').count();
    assert.ok(rows >= 6, `apps table has ${rows} rows`);
    await page.getByTestId('app-search').fill('straggler');
    assert.equal(await table.locator('tbody tr').count(), 2);
    await page.screenshot({ path: path.join(shots, '1-apps.png'), fullPage: true });
  });

  await step('open an app: timeline, metrics, findings', async () => {
    await page.getByText('Profile Straggler').click();
    await page.getByTestId('app-title').getByText('Profile Straggler').waitFor();
    await page.getByTestId('timeline').waitFor();
    await page.getByTestId('findings').getByText('7.8x the median').waitFor();
    // The repeated runs of log lines: the finding kind log-chunks.
    await page.getByTestId('log-chunks').waitFor();
    assert.ok((await page.getByTestId('metric-chart').count()) >= 1, 'no metric chart');
    // The GC chart's lines are named by collector, not numbered.
    const gc = page.getByTestId('metric-chart').filter({ hasText: 'jvm.gc.time' });
    await gc.getByText('CpuAndMemory.json.gz: PS Scavenge').waitFor();
    await gc.getByText('CpuAndMemory.json.gz: PS MarkSweep').waitFor();
    await page.getByTestId('flame').locator('canvas').first().waitFor();
    // The timeline drew the three tasks, the straggler marked.
    const timeline = page.locator('canvas[data-testid="timeline"][data-tasks]');
    assert.equal(await timeline.getAttribute('data-tasks'), '3');
    assert.equal(await timeline.getAttribute('data-stragglers'), '1');
    await page.screenshot({ path: path.join(shots, '2-app.png'), fullPage: true });
  });

  await step('the offline report draws the app page\'s timeline, from the page alone', async () => {
    const report = await context.newPage();
    report.on('console', (m) => {
      if (m.type() === 'error') errors.push(`report console: ${m.text()}`);
    });
    report.on('pageerror', (e) => errors.push(`report page error: ${e.message}`));
    const loaded = [];
    report.on('request', (r) => {
      if (!r.url().startsWith('data:')) loaded.push(r.url());
    });
    const url = `${server.url}/apps/ProfileStraggler/report`;
    await report.goto(url);
    // The same component as on the app page: its test id, its counts.
    const timeline = report.locator('canvas[data-testid="timeline"][data-tasks]');
    await timeline.waitFor();
    assert.equal(await timeline.getAttribute('data-tasks'), '3');
    assert.equal(await timeline.getAttribute('data-stragglers'), '1');
    await report.getByTestId('findings').getByText('7.8x the median').waitFor();
    // What the console log said, as on the app page.
    await report.getByTestId('log-errors').getByText('NativeCodeLoader').waitFor();
    await report.getByTestId('log-chunks').waitFor();
    assert.deepEqual(loaded, [url], 'the report loads nothing but itself');
    await report.screenshot({ path: path.join(shots, '2-report.png'), fullPage: true });
    await report.close();
    // The app page was a background tab while the report was open: the
    // browser may throttle its drawing until it is in front again.
    await page.bringToFront();
  });

  await step('brush a time window on the timeline', async () => {
    const box = await page.getByTestId('timeline').boundingBox();
    await page.mouse.move(box.x + 200, box.y + 60);
    await page.mouse.down();
    await page.mouse.move(box.x + 500, box.y + 60, { steps: 5 });
    await page.mouse.up();
    await page.getByTestId('clear-window').waitFor();
    assert.match(page.url(), /from=\d+&until=\d+|until=\d+/);
    await page.getByTestId('clear-window').click();
  });

  await step('click a stage: its flame graph', async () => {
    await page.getByTestId('stages').locator('tbody tr').first().click();
    await page.getByText('Flame graph: stage 0').waitFor();
    await page.getByTestId('flame').locator('canvas').first().waitFor();
    assert.match(page.url(), /stage=0/);
  });

  await step('search a frame', async () => {
    const search = page.getByTestId('flame').locator('input[type="search"], input[placeholder*="earch"]').first();
    await search.fill('SeqLike');
    await page.getByTestId('table-view').locator('tbody').getByText('SeqLike', { exact: false }).first().waitFor();
    const visible = await page.getByTestId('table-view').locator('tbody tr').count();
    assert.ok(visible >= 1, 'search left no table rows');
    await page.screenshot({ path: path.join(shots, '3-stage-flame-search.png'), fullPage: true });
  });

  await step('slowest tasks vs the rest', async () => {
    await page.getByTestId('slow-vs-rest').click();
    await page.getByTestId('diff').locator('canvas').first().waitFor();
    await page.getByText('typical → slowest').waitFor();
    const split = await page.getByTestId('slow-tasks').textContent();
    assert.match(split, /the slowest task \(.+ or longer; task 0\) against 2 others/, `slow task split: ${split}`);
    // Each side is its own 100 %: the viewer compares shares, not sums.
    const total = await page.getByTestId('diff').locator('tbody tr').filter({ has: page.getByText('total', { exact: true }) }).first().textContent();
    assert.match(total, /^total\s*100 %\s*100 %/, `diff table's total row: ${total}`);
    await page.screenshot({ path: path.join(shots, '4-slow-vs-rest.png'), fullPage: true });
  });

  await step('export pprof', async () => {
    await page.goto(`${server.url}/#/flame?query=${encodeURIComponent('{spark_app_id="ProfileStraggler"}')}`);
    await page.getByTestId('flame').locator('canvas').first().waitFor();
    assert.match(await page.getByTestId('type-select').textContent(), /samples \(count\)/, 'the profile type picker names the types and units');
    // The other pickers list what the selected app id has: not another recording's service.
    const services = page.getByTestId('pick-service_name');
    await services.locator('option', { hasText: 'dump1' }).waitFor({ state: 'detached' });
    assert.ok((await services.locator('option').count()) >= 2, 'the app picker lists the selected app');
    // The task picker asks for its thousands of values only when opened.
    const tasks = page.getByTestId('pick-spark_task_id');
    assert.equal(await tasks.locator('option').count(), 1, 'task ids listed before the picker was opened');
    await tasks.focus();
    await tasks.locator('option').nth(1).waitFor({ state: 'attached' });
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-pprof').click()]);
    const file = await download.path();
    const b = readFileSync(file);
    assert.ok(b.length > 100, `pprof export of ${b.length} bytes`);
    assert.equal(b[0], 0x1f, 'pprof export is not gzip');
    await page.screenshot({ path: path.join(shots, '5-flame.png'), fullPage: true });
  });

  await step('latency view splits samples by thread state', async () => {
    await page.goto(`${server.url}/#/latency?query=${encodeURIComponent('{spark_app_id="ProfileStraggler"}')}&by=spark_task_id&type=samples`);
    await page.getByTestId('latency').locator('tbody tr').first().waitFor();
    assert.ok((await page.getByTestId('latency').locator('tbody tr').count()) >= 3);
    await page.screenshot({ path: path.join(shots, '6-latency.png'), fullPage: true });
  });

  await step('heap view of a JFR recording with allocations', async () => {
    await page.goto(`${server.url}/#/heap?query=${encodeURIComponent('{service_name="cortex-dev-01__kafka-0__cpu_lock0_alloc0__0"}')}`);
    await page.getByTestId('flame').locator('canvas').first().waitFor();
    await page.getByTestId('classes-alloc_bytes').locator('tbody tr').first().waitFor();
    await page.screenshot({ path: path.join(shots, '7-heap.png'), fullPage: true });
  });

  await step('diff of two selections', async () => {
    const q = new URLSearchParams({ base: '{service_name="dump1"}', next: '{service_name="dump2"}' });
    await page.goto(`${server.url}/#/diff?${q}`);
    await page.getByTestId('diff').locator('canvas').first().waitFor();
  });

  await step('a recursive function counts its total once per stack', async () => {
    // fib calls itself: 8 of 10 samples are under it, however deep.
    for (const [app, body] of [['recursive', 'main;fib;fib;fib 5\nmain;fib 3\nmain;other 2\n'], ['recursive2', 'main;fib;fib;fib 1\nmain;fib 1\nmain;other 8\n']]) {
      const imp = await fetch(`${server.url}/api/v1/import?path=${app}.folded&app=${app}&kind=profile`, { method: 'POST', body });
      assert.equal(imp.status, 200, await imp.text());
    }
    await page.goto(`${server.url}/#/flame?query=${encodeURIComponent('{service_name="recursive"}')}`);
    const fib = page.getByTestId('table-view').locator('tbody tr').filter({ has: page.getByText('fib', { exact: true }) });
    await fib.waitFor();
    assert.match(await fib.textContent(), /^fib\s*8\.00\s*8\.00\s*$/, 'fib: self 8, total 8 (not 18)');
    // The sandwich view's callees start at fib's outermost call: 8 samples.
    await page.getByTestId('flame').locator('button[aria-label="Sandwich"]').click();
    await fib.click();
    const callees = page.getByTestId('flame').getByTestId('flamegraph-canvas').nth(1);
    const box = await callees.boundingBox();
    await page.mouse.move(box.x + 20, box.y + 8);
    const tip = page.getByTestId('tooltip').filter({ hasText: 'Samples' });
    await tip.waitFor();
    const text = await tip.textContent();
    assert.match(text, /Count:\s*8\.00 /, `sandwich callees of fib: ${text}`);
    assert.doesNotMatch(text, /RAM/, 'stack samples are not objects in RAM');
    const q = new URLSearchParams({ base: '{service_name="recursive"}', next: '{service_name="recursive2"}' });
    await page.goto(`${server.url}/#/diff?${q}`);
    const diffFib = page.getByTestId('diff').locator('tbody tr').filter({ has: page.getByText('fib', { exact: true }) });
    await diffFib.waitFor();
    assert.match(await diffFib.textContent(), /^fib\s*80 %\s*20 %/, 'fib: 80 % of the baseline, 20 % of the comparison');
  });

  await step('a running app: the last 5 minutes, refreshed by hand and automatically', async () => {
    const now = Math.floor(Date.now() / 1000);
    const send = async (body, ago) => {
      const q = { name: 'live-app{}', from: String(now - ago - 10), until: String(now - ago) };
      assert.equal((await fetch(`${server.url}/ingest?${new URLSearchParams(q)}`, { method: 'POST', body })).status, 200);
    };
    await send('main;live 5\n', 30);
    await send('main;old 100\n', 7200); // two hours ago: not in the range
    await page.goto(`${server.url}/#/flame?query=${encodeURIComponent('{service_name="live-app"}')}`);
    await page.getByTestId('range').selectOption('now-5m');
    assert.match(page.url(), /from=now-5m/);
    // The label pickers list the values of the range: not a recording of 2023.
    const apps = page.getByTestId('pick-service_name');
    await apps.locator('option', { hasText: 'cortex-dev-01' }).waitFor({ state: 'detached' });
    await apps.locator('option', { hasText: 'live-app' }).waitFor({ state: 'attached' });
    const head = page.getByTestId('flame').locator('.flame-head');
    await head.getByText(/total 5 ·/).waitFor();
    await send('main;live 3\n', 0);
    await page.getByTestId('refresh').click();
    await head.getByText(/total 8 ·/).waitFor();
    await page.getByTestId('auto-refresh').check();
    await send('main;live 2\n', 0);
    await head.getByText(/total 10 ·/).waitFor({ timeout: 20000 });
    await page.getByTestId('auto-refresh').uncheck();
  });

  await step('compare two runs of one app', async () => {
    // JavaUDFJob's event log, and a second run: the same log under another app id.
    const log = readFileSync(path.join(testdata, 'eventlogs/nvidia/java_udf_eventlog'), 'utf8');
    for (const [name, body] of [['java_udf', log], ['java_udf_rerun', log.replaceAll('local-1774375930687', 'local-1774375930999')]]) {
      const imp = await fetch(`${server.url}/api/v1/import?path=${name}&kind=eventlog`, { method: 'POST', body });
      assert.equal(imp.status, 200, await imp.text());
    }
    for (const [id, body] of [['local-1774375930687', 'main;udf 2\n'], ['local-1774375930999', 'main;udf 6\n']]) {
      const q = { name: `JavaUDFJob{spark_app_id=${id}}` };
      assert.equal((await fetch(`${server.url}/ingest?${new URLSearchParams(q)}`, { method: 'POST', body })).status, 200);
    }
    await page.goto(`${server.url}/#/apps/local-1774375930999`);
    const other = page.getByTestId('other-runs');
    await other.waitFor();
    await other.getByRole('link', { name: /local-1774375930687/ }).click();
    await page.getByTestId('diff').getByText('baseline 2 · comparison 6').waitFor();
  });

  await step('diff of one service over two time ranges', async () => {
    // The same service an hour apart: each side reads its own range.
    const t0 = 1700000000;
    for (const [i, body] of ['main;work 2\n', 'main;work 6\n'].entries()) {
      const q = { name: 'ranged-diff{}', from: String(t0 + 3600 * i), until: String(t0 + 3600 * i + 10) };
      assert.equal((await fetch(`${server.url}/ingest?${new URLSearchParams(q)}`, { method: 'POST', body })).status, 200);
    }
    const sel = '{service_name="ranged-diff"}';
    const q = new URLSearchParams({ base: sel, next: sel, baseFrom: String(t0 - 60), baseUntil: String(t0 + 60), nextFrom: String(t0 + 3540), nextUntil: String(t0 + 3660) });
    await page.goto(`${server.url}/#/diff?${q}`);
    await page.getByTestId('diff').getByText('baseline 2 · comparison 6').waitFor();
  });

  await step('a large flame graph folds small frames, and shows them all on request', async () => {
    // A generated profile whose call tree has 20,101 frames, over the
    // page's bound of 16,384.
    const lines = [];
    for (let i = 0; i < 20000; i++) lines.push(`main;caller${i % 100};callee${i} ${1 + (i % 7)}`);
    const imp = await fetch(`${server.url}/api/v1/import?path=wide.folded&app=wide-tree&kind=profile`, { method: 'POST', body: lines.join('\n') + '\n' });
    assert.equal(imp.status, 200, await imp.text());
    await page.goto(`${server.url}/#/flame?query=${encodeURIComponent('{service_name="wide-tree"}')}`);
    const note = page.getByTestId('frames-folded');
    await note.waitFor();
    assert.match(await note.textContent(), /small frames are folded/);
    await page.getByTestId('flame').locator('canvas').first().waitFor();
    await page.screenshot({ path: path.join(shots, '10-folded.png') });
    await note.getByRole('button', { name: 'show all frames' }).click();
    await note.waitFor({ state: 'detached' });
    await page.getByTestId('flame').locator('canvas').first().waitFor();
    // A diff of it folds the same way.
    const sel = '{service_name="wide-tree"}';
    await page.goto(`${server.url}/#/diff?${new URLSearchParams({ base: sel, next: sel })}`);
    const diffNote = page.getByTestId('diff').getByTestId('frames-folded');
    await diffNote.waitFor();
    await page.getByTestId('diff').locator('canvas').first().waitFor();
  });

  await step('agents page', async () => {
    // One executor's upload after it dropped two windows, sent again as
    // after a lost answer, then a bad one.
    const ingest = (q, body, headers) => fetch(`${server.url}/ingest?${new URLSearchParams(q)}`, { method: 'POST', body, headers });
    for (let i = 0; i < 2; i++) {
      const r = await ingest({ name: 'e2e{executorId=7}', spyName: 'sparkprof', dropped: '2' }, 'main;work 1\n', { 'Idempotency-Key': 'e2e-window-1' });
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('Idempotent-Replayed'), i === 0 ? null : 'true');
    }
    assert.equal((await ingest({ name: 'e2e{executorId=7}', format: 'pprof' }, 'not pprof')).status, 422);
    // An executor whose clock is two hours behind the server's.
    const behind = Math.floor(Date.now() / 1000) - 7200;
    assert.equal((await ingest({ name: 'e2e{executorId=8}', from: String(behind - 10), until: String(behind) }, 'main;work 1\n')).status, 200);
    await page.goto(`${server.url}/#/agents`);
    await page.getByText('Every sender of profiles').waitFor();
    const e2eRows = page.getByTestId('agents').locator('tbody tr').filter({ hasText: 'e2e' });
    const agentRow = e2eRows.filter({ hasText: 'sparkprof' }); // executor 7's: its client
    const row = await agentRow.textContent();
    for (const want of ['sparkprof', 'not a valid pprof profile']) assert.ok(row.includes(want), `agents row lacks ${want}: ${row}`);
    assert.match(row, /\(\d+ ms ago\)|\([\d.]+ s ago\)/, `agents row says how long ago it last sent: ${row}`);
    assert.equal(await agentRow.getByTestId('retried').textContent(), '1', 'the agents row counts the upload sent again');
    const skewed = e2eRows.filter({ hasNot: page.getByText('sparkprof') }).getByTestId('window-lag');
    assert.match(await skewed.textContent(), /^2\.0 h \(clock off\?\)$/, 'the agents row of a sender two hours behind says its clock looks off');
    await page.screenshot({ path: path.join(shots, '8-agents.png'), fullPage: true });
  });

  await step('an app with failures and lost executors', async () => {
    await page.goto(`${server.url}/#/apps/application_1707709865217_0493`);
    await page.getByTestId('timeline').waitFor();
    await page.getByTestId('executors').waitFor();
    await page.getByTestId('no-profiles').waitFor();
    // Its 25 skipped stages are apart until asked for; executors in numeric order.
    const stageRows = page.getByTestId('stages').locator('tbody tr');
    assert.equal(await stageRows.count(), 20, 'the stages that ran');
    await page.getByTestId('show-skipped').check();
    assert.equal(await stageRows.count(), 45, 'with the skipped stages');
    await page.getByTestId('show-skipped').uncheck();
    const execs = await page.getByTestId('executors').locator('tbody tr td:first-child').allTextContents();
    assert.deepEqual(execs.slice(0, 4), ['driver', '1', '2', '3'], `executor order: ${execs}`);
    await page.screenshot({ path: path.join(shots, '9-app-failures.png'), fullPage: true });
  });

  await step('a stage with more than one finding shows the others under the first', async () => {
    await page.goto(`${server.url}/#/apps/application_1462781278026_205691`);
    await page.getByTestId('findings').getByText('30.6x the median task').waitFor();
    const also = await page.getByTestId('finding-also').allTextContents();
    assert.ok(also.some((a) => a.includes('gc: stage 0: 19% of task time in GC')), `also: ${also}`);
  });

  await step('a server with a token: sign in, then the UI works', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sparkprof-e2e-token-'));
    const tokenFile = path.join(dir, 'token');
    writeFileSync(tokenFile, 's3cret\n');
    const locked = await startServer(['--auth-token-file', tokenFile]);
    try {
      const guest = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
      const p = await guest.newPage();
      await p.goto(`${locked.url}/#/agents`);
      await p.locator('input[name=token]').fill('wrong');
      await p.locator('input[type=submit]').click();
      await p.getByText("That is not the server's token.").waitFor();
      await p.locator('input[name=token]').fill('s3cret');
      await p.locator('input[type=submit]').click();
      // Back on the page asked for; the UI's own requests carry the cookie.
      await p.getByTestId('agents-empty').waitFor();
      await p.goto(`${locked.url}/`);
      await p.getByText('No applications yet').waitFor();
      await guest.close();
    } finally {
      locked.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
} finally {
  await browser.close();
  server.stop();
}
if (errors.length > 0) {
  console.error(`FAIL: ${errors.length} browser errors:\n${errors.join('\n')}`);
  process.exit(1);
}
console.log(`PASS: ${steps.length} steps; screenshots in ${shots}`);
