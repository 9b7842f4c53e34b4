// The flame graph: the page that asks for a service first, the samples
// over time above it (a line per label value, drag to narrow), units
// right for every profile type, names as Java writes them, the function
// table, sandwich and diff views, folding of large trees, the server's
// self-contained /flame page, and the latency and heap views.
import assert from 'node:assert/strict';
import { dataset, drag, hover } from '../lib.mjs';

const q = (sel) => encodeURIComponent(sel);

// units are the profile types of the corpus with the unit their values
// read in: a tooltip's total, and the flame graph's head.
const units = [
  ['cortex-dev-01__kafka-0__cpu_lock0_alloc0__0', 'cpu', /^[\d.]+ (ns|µs|ms|s|min|h)$/],
  ['cortex-dev-01__kafka-0__cpu_lock0_alloc0__0', 'alloc_bytes', /^[\d.]+ (B|KiB|MiB|GiB|TiB)$/],
  ['cortex-dev-01__kafka-0__cpu_lock0_alloc0__0', 'alloc_objects', /^[\d,]+$/],
  ['cortex-dev-01__kafka-0__cpu_lock0_alloc0__0', 'lock_contentions', /^[\d,]+$/],
  ['cortex-dev-01__kafka-0__cpu_lock0_alloc0__0', 'lock_delay', /^[\d.]+ (ns|µs|ms|s|min|h)$/],
  ['wall', 'wall', /^[\d.]+ (ns|µs|ms|s|min|h)$/],
  ['ProfileStraggler', 'samples', /^[\d,]+$/],
];

export async function run({ page, step, shot, url }) {
  await step('the flame graph page asks for a service first', async () => {
    await page.goto(`${url}/#/flame`);
    const pick = page.getByTestId('pick-service-first');
    await pick.waitFor();
    assert.equal(await page.getByTestId('flamegraph-canvas').count(), 0, 'a flame graph of every service merged');
    await shot('5-flame-pick-service.png');
    await pick.getByRole('link', { name: 'dump1', exact: true }).click();
    await page.getByTestId('flamegraph-canvas').waitFor();
    assert.match(decodeURIComponent(page.url()), /service_name="dump1"/);
  });

  await step('samples over time: a line per label value, drag to narrow the range', async () => {
    await page.goto(`${url}/#/flame?query=${q('{service_name="ProfileStraggler"}')}&by=thread_pool`);
    const series = page.getByTestId('sample-series');
    // The page before had a series of its own: wait for this query's
    // lines, one per thread pool, not for any.
    await page.waitForFunction(() => Number(document.querySelector('[data-testid="sample-series"]')?.dataset.series) >= 5)
      .catch(async (err) => assert.fail(`a line per thread pool: ${(await dataset(series)).series} lines (${err.message})`));
    await page.getByTestId('flamegraph-canvas').waitFor();
    await shot('5-flame-series.png');
    const plot = series.locator('.u-over');
    await drag(page, plot, 0.3, 0.5, 40);
    await page.waitForFunction(() => /from=\d+&until=\d+/.test(window.location.hash));
    await page.getByTestId('flamegraph-canvas').waitFor();
  });

  await step('export pprof', async () => {
    await page.goto(`${url}/#/flame?query=${q('{spark_app_id="ProfileStraggler"}')}`);
    await page.getByTestId('flame').getByTestId('flamegraph-canvas').waitFor();
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
    const { readFileSync } = await import('node:fs');
    const b = readFileSync(await download.path());
    assert.ok(b.length > 100, `pprof export of ${b.length} bytes`);
    assert.equal(b[0], 0x1f, 'pprof export is not gzip');
    await shot('5-flame.png');
  });

  for (const [service, type, unit] of units) {
    await step(`units of ${type}: the tooltip and the head read in ${unit}`, async () => {
      await page.goto(`${url}/#/flame?query=${q(`{service_name="${service}"}`)}&type=${type}`);
      // The page before drew another graph: wait for this one's.
      await page.waitForFunction((t) => document.querySelector('[data-testid="type-select"]')?.value === t, type);
      const canvas = page.getByTestId('flamegraph-canvas');
      await canvas.waitFor();
      // The root frame spans the width: hover it.
      await hover(page, canvas, 200, 8);
      const tip = page.getByTestId('flame-tooltip');
      await tip.waitFor();
      const total = (await tip.textContent()).match(/Total: (.+?) \(100 %\)/);
      assert.ok(total && unit.test(total[1]), `${type}: tooltip ${await tip.textContent()}`);
      const head = (await page.getByTestId('flame').locator('.flame-head').textContent()).match(/total (.+?) ·/);
      assert.ok(head && unit.test(head[1]), `${type}: head ${head}`);
      if (type === 'cpu') await shot('5-flame-units-cpu.png', page.getByTestId('flame'));
    });
  }

  await step('names shortened from the front; the full name on hover', async () => {
    await page.goto(`${url}/#/flame?query=${q('{service_name="cortex-dev-01__kafka-0__cpu_lock0_alloc0__0"}')}&type=cpu`);
    await page.waitForFunction(() => document.querySelector('[data-testid="type-select"]')?.value === 'cpu');
    const canvas = page.getByTestId('flamegraph-canvas');
    await canvas.waitFor();
    // Zoom down a few levels at the left edge: the path above the zoomed
    // frame names each frame in 40 characters, cut at the front.
    for (let depth = 1; depth <= 6; depth++) {
      await hover(page, canvas, 3, depth * 18 + 8);
      await page.mouse.down();
      await page.mouse.up();
    }
    const crumbs = page.getByTestId('flame-crumbs').locator('a');
    const long = crumbs.filter({ hasText: /^…/ }).first();
    await long.waitFor();
    const [text, title] = [await long.textContent(), await long.getAttribute('title')];
    assert.ok(text.length <= 40 && title.length > 40 && title.endsWith(text.slice(1)), `crumb ${text} of ${title}`);
    await shot('5-flame-crumbs.png', page.getByTestId('flame'));
  });

  await step('latency view splits samples by thread state; its type is a picker', async () => {
    await page.goto(`${url}/#/latency?query=${q('{spark_app_id="ProfileStraggler"}')}&by=spark_task_id&type=samples`);
    await page.getByTestId('latency').locator('tbody tr').first().waitFor();
    assert.ok((await page.getByTestId('latency').locator('tbody tr').count()) >= 3);
    const types = await page.getByTestId('latency-type').locator('option').allTextContents();
    assert.ok(types.includes('samples (count)'), `latency types ${types}`);
    await shot('6-latency.png');
  });

  await step('heap view: classes as Java writes them, sizes in one unit', async () => {
    await page.goto(`${url}/#/heap?query=${q('{service_name="cortex-dev-01__kafka-0__cpu_lock0_alloc0__0"}')}`);
    await page.getByTestId('flame').getByTestId('flamegraph-canvas').waitFor();
    const classes = page.getByTestId('classes-alloc_bytes');
    await classes.locator('tbody tr').first().waitFor();
    const names = await classes.locator('tbody td:first-child').allTextContents();
    assert.equal(names[0], 'byte[]', `top class ${names[0]}`);
    assert.ok(names.includes('java.lang.Object[]') && !names.some((n) => n.startsWith('[')), `classes ${names}`);
    const sizes = await classes.locator('tbody td:nth-child(2)').allTextContents();
    const unitsSeen = new Set(sizes.map((s) => s.split(' ')[1]));
    assert.equal(unitsSeen.size, 1, `sizes in ${[...unitsSeen]}`);
    await shot('7-heap.png');
  });

  await step('diff of two selections', async () => {
    const p = new URLSearchParams({ base: '{service_name="dump1"}', next: '{service_name="dump2"}' });
    await page.goto(`${url}/#/diff?${p}`);
    await page.getByTestId('diff').getByTestId('flamegraph-canvas').waitFor();
    await shot('7-diff.png');
  });

  await step('a recursive function counts its total once per stack, in the table and the sandwich view', async () => {
    // fib calls itself: 8 of 10 samples are under it, however deep.
    for (const [app, body] of [['recursive', 'main;fib;fib;fib 5\nmain;fib 3\nmain;other 2\n'], ['recursive2', 'main;fib;fib;fib 1\nmain;fib 1\nmain;other 8\n']]) {
      const imp = await fetch(`${url}/api/v1/import?path=${app}.folded&app=${app}&kind=profile`, { method: 'POST', body });
      assert.equal(imp.status, 200, await imp.text());
    }
    await page.goto(`${url}/#/flame?query=${q('{service_name="recursive"}')}`);
    const fib = page.getByTestId('table-view').locator('tbody tr').filter({ has: page.getByText('fib', { exact: true }) });
    await fib.waitFor();
    assert.match(await fib.textContent(), /^fib\s*8\s*80 %\s*8\s*80 %$/, 'fib: self 8, total 8 (not 18)');
    // The sandwich view's callees start at fib's outermost call: 8 samples.
    await fib.click();
    await page.getByTestId('flame-view').selectOption('sandwich');
    const sandwich = page.getByTestId('sandwich');
    await sandwich.waitFor();
    assert.deepEqual([(await dataset(sandwich)).calleesTotal, (await dataset(sandwich)).callersTotal], ['8', '8']);
    await hover(page, page.getByTestId('flame-callees'), 20, 8);
    const tip = page.getByTestId('flame-tooltip');
    await tip.waitFor();
    assert.match(await tip.textContent(), /^fib.*Total: 8 \(100 %\)/, 'sandwich callees of fib');
    await shot('8-sandwich.png', page.getByTestId('flamegraph'));
    const p = new URLSearchParams({ base: '{service_name="recursive"}', next: '{service_name="recursive2"}' });
    await page.goto(`${url}/#/diff?${p}`);
    const diffFib = page.getByTestId('diff').getByTestId('table-view').locator('tbody tr').filter({ has: page.getByText('fib', { exact: true }) });
    await diffFib.waitFor();
    assert.match(await diffFib.textContent(), /^fib\s*80 %\s*20 %/, 'fib: 80 % of the baseline, 20 % of the comparison');
  });

  await step('a large flame graph folds small frames, and shows them all on request', async () => {
    // A generated profile whose call tree has 20,101 frames, over the
    // page's bound of 16,384.
    const lines = [];
    for (let i = 0; i < 20000; i++) lines.push(`main;caller${i % 100};callee${i} ${1 + (i % 7)}`);
    const imp = await fetch(`${url}/api/v1/import?path=wide.folded&app=wide-tree&kind=profile`, { method: 'POST', body: lines.join('\n') + '\n' });
    assert.equal(imp.status, 200, await imp.text());
    await page.goto(`${url}/#/flame?query=${q('{service_name="wide-tree"}')}`);
    const note = page.getByTestId('frames-folded');
    await note.waitFor();
    assert.match(await note.textContent(), /small frames are folded/);
    await page.getByTestId('flame').getByTestId('flamegraph-canvas').waitFor();
    await shot('10-folded.png');
    await note.getByRole('button', { name: 'show all frames' }).click();
    await note.waitFor({ state: 'detached' });
    await page.getByTestId('flame').getByTestId('flamegraph-canvas').waitFor();
    assert.equal((await dataset(page.getByTestId('table-view'))).rows, '20102', 'every function in the table');
    // A diff of it folds the same way.
    const sel = '{service_name="wide-tree"}';
    await page.goto(`${url}/#/diff?${new URLSearchParams({ base: sel, next: sel })}`);
    await page.getByTestId('diff').getByTestId('frames-folded').waitFor();
    await page.getByTestId('diff').getByTestId('flamegraph-canvas').waitFor();
  });

  await step("the server's /flame page draws with the same flame graph", async () => {
    await page.goto(`${url}/flame?query=${q('{service_name="dump1"}')}`);
    await page.getByTestId('flamegraph-canvas').waitFor();
    const g = await dataset(page.getByTestId('flamegraph'));
    assert.ok(Number(g.total) > 0, `total ${g.total}`);
    await page.getByTestId('table-view').locator('tbody tr').first().waitFor();
    await shot('10-flame-html.png');
  });
}
