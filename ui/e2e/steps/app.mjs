// The apps list and an app's overview: its timeline (phases, executor
// lanes, compressed idle time, zoom, the charts on its axis), findings
// with their evidence, stages, the default flame graph of its task
// threads on CPU, and the offline report.
import assert from 'node:assert/strict';
import path from 'node:path';
import { dataset, drag } from '../lib.mjs';

export async function run({ page, context, errors, step, shot, shots, url }) {
  await step('apps page lists the preloaded applications', async () => {
    await page.goto(`${url}/`);
    const table = page.getByTestId('apps');
    await table.getByText('Profile Straggler').waitFor();
    const rows = await table.locator('tbody tr').count();
    assert.ok(rows >= 6, `apps table has ${rows} rows`);
    await page.getByTestId('app-search').fill('straggler');
    assert.equal(await table.locator('tbody tr').count(), 2);
    await shot('1-apps.png');
  });

  await step('open an app: timeline with its charts on one axis, findings', async () => {
    await page.getByText('Profile Straggler').click();
    await page.getByTestId('app-title').getByText('Profile Straggler').waitFor();
    await page.getByTestId('timeline').waitFor();
    // The straggler names the leaf and the application frame that owns it.
    const straggler = page.getByTestId('findings').locator('li').filter({ hasText: '7.8x the median' });
    await straggler.getByText(/TraversableOnce.*nonEmpty, called from profile\.sparkjobs\.JobStraggler/).waitFor();
    // The repeated runs of log lines: the finding kind log-chunks.
    await page.getByTestId('log-chunks').waitFor();
    // The charts: the profile samples, CPU, heap and GC, each plot starting
    // where the timeline's axis does (its 130-pixel gutter).
    const charts = page.getByTestId('metric-chart');
    await charts.nth(1).waitFor();
    const lefts = await charts.evaluateAll((cs) => cs.map((c) => c.dataset.plotLeft));
    assert.ok(lefts.length >= 4 && lefts.every((l) => l === '130'), `metric charts' plot lefts ${lefts}`);
    const gc = charts.filter({ hasText: 'jvm.gc.time' });
    // Each line is named by the JVM's host, as jvm-profiler's pid@host
    // names the process, not by the file it came from.
    await gc.getByText('as-MacBook-Pro: PS Scavenge').waitFor();
    await gc.getByText('as-MacBook-Pro: PS MarkSweep').waitFor();
    await page.getByTestId('flame').getByTestId('flamegraph-canvas').waitFor();
    // The timeline drew the three tasks, the straggler marked.
    const d = await dataset(page.locator('canvas[data-testid="timeline"][data-tasks]'));
    assert.equal(d.tasks, '3');
    assert.equal(d.stragglers, '1');
    await shot('2-app.png');
  });

  await step('a recommendation opens the flame graph of its frames', async () => {
    const link = page.getByTestId('recommendation').filter({ hasText: 'list-append' }).getByTestId('recommendation-flame');
    const target = await link.getAttribute('href');
    const params = new URLSearchParams(target.split('?')[1]);
    assert.ok(params.get('focus'), `the link ${target} carries no focus`);
    await link.click();
    await page.getByTestId('focus').getByText(params.get('focus')).waitFor();
    await page.getByTestId('flame').getByTestId('flamegraph-canvas').waitFor();
    // The page's flame graph is the focused one: fewer samples than all.
    const ticks = async (q) => (await (await fetch(`${url}/api/v1/render?${q}`)).json()).flamebearer.numTicks;
    const sel = new URLSearchParams({ query: params.get('query'), type: params.get('type') });
    const all = await ticks(sel);
    sel.set('focus', params.get('focus'));
    const focused = await ticks(sel);
    assert.ok(focused > 0 && focused < all, `focused ${focused} of ${all} samples`);
    await page.goBack();
    await page.getByTestId('app-title').getByText('Profile Straggler').waitFor();
  });

  await step("a finding's evidence reads as a table", async () => {
    const straggler = page.getByTestId('findings').locator('li').filter({ hasText: '7.8x the median' });
    await straggler.locator('summary').click();
    const ev = straggler.getByTestId('evidence');
    await ev.waitFor();
    const text = await ev.textContent();
    for (const want of ['17.9 min', '2.3 min', '7.82×', 'JobStraggler', '79 %']) assert.ok(text.includes(want), `evidence lacks ${want}: ${text}`);
    assert.ok(!text.includes('{'), `evidence shows JSON: ${text}`);
    await shot('2-evidence.png', straggler);
  });

  await step("an app's flame graph is its task threads on CPU; all threads a click away", async () => {
    const graph = page.getByTestId('flame').getByTestId('flamegraph');
    assert.equal(await page.getByTestId('thread-scope').inputValue(), '');
    await page.getByTestId('flame').getByTestId('flame-search').fill('JobStraggler');
    await page.waitForFunction(() => Number(document.querySelector('[data-testid="flame"] [data-testid="flamegraph"]').dataset.matched) > 0);
    let g = await dataset(graph);
    assert.ok(Number(g.matched) / Number(g.total) > 0.9, `JobStraggler's share of the task threads on CPU: ${g.matched} of ${g.total}`);
    await shot('2-app-flame-task-cpu.png', page.getByTestId('flame'));
    await page.getByTestId('thread-scope').selectOption('all');
    assert.match(page.url(), /threads=all/);
    await page.waitForFunction((before) => Number(document.querySelector('[data-testid="flame"] [data-testid="flamegraph"]').dataset.total) > before, Number(g.total));
    g = await dataset(graph);
    assert.ok(Number(g.matched) / Number(g.total) < 0.1, `JobStraggler's share of all threads: ${g.matched} of ${g.total}`);
    await page.getByTestId('thread-scope').selectOption('');
  });

  await step("the offline report draws the app page's timeline, from the page alone", async () => {
    const report = await context.newPage();
    report.on('console', (m) => {
      if (m.type() === 'error') errors.push(`report console: ${m.text()}`);
    });
    report.on('pageerror', (e) => errors.push(`report page error: ${e.message}`));
    const loaded = [];
    report.on('request', (r) => {
      if (!r.url().startsWith('data:')) loaded.push(r.url());
    });
    const reportURL = `${url}/apps/ProfileStraggler/report`;
    await report.goto(reportURL);
    // The same component as on the app page: its test id, its counts.
    const timeline = report.locator('canvas[data-testid="timeline"][data-tasks]');
    await timeline.waitFor();
    const d = await dataset(timeline);
    assert.equal(d.tasks, '3');
    assert.equal(d.stragglers, '1');
    assert.ok((await report.getByTestId('metric-chart').count()) >= 2, 'the report has no metric charts');
    await report.getByTestId('findings').getByText('7.8x the median').waitFor();
    // What the console log said, as on the app page.
    await report.getByTestId('log-errors').getByText('NativeCodeLoader').waitFor();
    await report.getByTestId('log-chunks').waitFor();
    await report.getByTestId('jobs').waitFor();
    assert.deepEqual(loaded, [reportURL], 'the report loads nothing but itself');
    await report.screenshot({ path: path.join(shots, '2-report.png'), fullPage: true });
    await report.close();
    // The app page was a background tab while the report was open: the
    // browser may throttle its drawing until it is in front again.
    await page.bringToFront();
  });

  await step('drag across the timeline: it zooms, and scopes the page', async () => {
    const timeline = page.getByTestId('timeline');
    const before = await timeline.getAttribute('data-view');
    await drag(page, timeline, 0.3, 0.6, 60);
    await page.getByTestId('zoom-out').waitFor();
    assert.match(page.url(), /from=\d+&until=\d+|until=\d+/);
    const after = await timeline.getAttribute('data-view');
    const span = (v) => v.split(',').map(Number).reduce((a, b) => b - a);
    assert.ok(span(after) < span(before) / 2, `view ${before} → ${after}`);
    await shot('2-app-zoomed.png', page.locator('.timeline'));
    await page.getByTestId('zoom-out').click();
    await page.getByTestId('zoom-out').waitFor({ state: 'detached' });
  });

  await step('click a stage: its flame graph', async () => {
    // The stage's name cell: its id cell links to the stage's page.
    await page.getByTestId('stages').locator('tbody tr').first().locator('td').nth(1).click();
    await page.getByText('Flame graph: stage 0').waitFor();
    await page.getByTestId('flame').getByTestId('flamegraph-canvas').waitFor();
    assert.match(page.url(), /stage=0/);
  });

  await step('search a frame', async () => {
    await page.getByTestId('flame').getByTestId('flame-search').fill('SeqLike');
    const rows = page.getByTestId('table-view').locator('tbody tr:not([aria-hidden])');
    await rows.filter({ hasText: 'SeqLike' }).first().waitFor();
    assert.ok((await rows.count()) >= 1, 'search left no table rows');
    // Scala's :+ as Scala writes it, not $colon$plus.
    await rows.filter({ hasText: 'SeqLike$class.:+' }).first().waitFor();
    await page.getByTestId('flame').getByTestId('flame-matched').waitFor();
    await shot('3-stage-flame-search.png');
  });

  await step('slowest tasks vs the rest', async () => {
    await page.getByTestId('slow-vs-rest').click();
    await page.getByTestId('diff').getByTestId('flamegraph-canvas').waitFor();
    await page.getByText('typical → slowest').waitFor();
    const split = await page.getByTestId('slow-tasks').textContent();
    assert.match(split, /the slowest task \(.+ or longer; task 0\) against 2 others/, `slow task split: ${split}`);
    // Each side is its own 100 %: the viewer compares shares, not sums.
    const total = await page.getByTestId('diff').getByTestId('table-view').locator('tbody tr').filter({ has: page.getByText('total', { exact: true }) }).first().textContent();
    assert.match(total, /^total\s*100 %\s*100 %/, `diff table's total row: ${total}`);
    await shot('4-slow-vs-rest.png');
  });

  await step('a long stretch without tasks is compressed; tasks are coloured by phase', async () => {
    await page.goto(`${url}/#/apps/application_1603128018386_7846`);
    const timeline = page.locator('canvas[data-testid="timeline"][data-tasks]');
    await timeline.waitFor();
    const d = await dataset(timeline);
    assert.equal(d.tasks, '8580');
    assert.ok(Number(d.gaps) >= 1, `compressed stretches: ${d.gaps}`);
    // The 1.3 minutes of driver work before the first task are a band
    // labelled with how long they lasted.
    // Pixels of the computing phase's colour are drawn.
    const computing = await timeline.evaluate((c) => {
      const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 0; i < px.length; i += 4) if (px[i] === 0x8f && px[i + 1] === 0xc9 && px[i + 2] === 0x5a) n++;
      return n;
    });
    assert.ok(computing > 100, `${computing} pixels of computing`);
    const legend = await page.getByTestId('timeline-legend').textContent();
    for (const p of ['scheduler delay', 'task deserialisation', 'shuffle read', 'computing', 'shuffle write', 'getting result']) assert.ok(legend.includes(p), `legend lacks ${p}`);
    // Its warnings in full, as the command line prints them.
    await page.getByTestId('warnings').locator('li').first().waitFor();
    assert.match(await page.getByTestId('warnings').textContent(), /5 jobs ended without a JobStart \(Spark drops events when a listener queue is full\): their stages and submission times are unknown/);
    await shot('2-app-compressed.png', page.locator('.timeline'));
  });

  await step('an app with failures, lost and idle executors', async () => {
    await page.goto(`${url}/#/apps/application_1707709865217_0493`);
    const timeline = page.locator('canvas[data-testid="timeline"][data-tasks]');
    await timeline.waitFor();
    // A lane for every executor: 15 added (6 ran no task), 14 removed by
    // dynamic allocation, and the driver.
    const d = await dataset(timeline);
    assert.deepEqual([d.executors, d.idleExecutors, d.removed], ['16', '6', '14']);
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
    await shot('9-app-failures.png');
    await shot('9-app-executor-lanes.png', page.locator('.timeline'));
  });

  await step('a stage with more than one finding shows the others under the first', async () => {
    await page.goto(`${url}/#/apps/application_1462781278026_205691`);
    await page.getByTestId('findings').getByText('30.6x the median task').waitFor();
    const also = await page.getByTestId('finding-also').allTextContents();
    assert.ok(also.some((a) => a.includes('gc: stage 0: executors spent 18% of their time in GC')), `also: ${also}`);
  });
}
