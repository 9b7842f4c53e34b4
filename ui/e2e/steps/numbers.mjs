// The numbers a Spark engineer reads first, each as it should read: the
// axes of the metric charts, tasks without task metrics, stages with
// resubmitted tasks, the samples over time.
import assert from 'node:assert/strict';
import { dataset } from '../lib.mjs';

export async function run({ page, step, shot, url }) {
  await step("the metric charts' time axis labels every tick with its time", async () => {
    await page.goto(`${url}/#/apps/ProfileStraggler`);
    const charts = page.getByTestId('metric-chart');
    await charts.nth(1).waitFor();
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="metric-chart"]')].every((c) => c.dataset.xTicks));
    for (const c of await charts.all()) {
      const ticks = (await dataset(c)).xTicks.split('|');
      assert.ok(ticks.length >= 3, `ticks ${ticks}`);
      // The first tick is the app's start; none is blank or negative.
      assert.ok(ticks.every((tk) => tk !== '' && !tk.startsWith('-')), `metric chart's x ticks: ${ticks.join(', ')}`);
    }
    // The legends name the JVM (executor or host), not the file.
    const legends = await page.locator('[data-testid="metric-chart"] .u-legend .u-series:not(:first-child)').allTextContents();
    assert.ok(legends.length >= 4, `legends ${legends}`);
    assert.ok(legends.every((l) => !l.includes('.json')), `metric legends name files: ${legends.join('; ')}`);
    await shot('n1-metric-axes.png', page.locator('.timeline'));
  });

  await step("an executor's few tasks get lanes one can read", async () => {
    // ProfileStraggler's driver ran 3 tasks at once: 3 lanes.
    const d = await dataset(page.locator('canvas[data-testid="timeline"][data-tasks]'));
    assert.equal(d.laneHeights, '12', `lane heights ${d.laneHeights}`);
    await shot('n2-lanes.png', page.locator('canvas[data-testid="timeline"]'));
  });

  await step('tasks from a console log read as unknown, not as scheduler delay or 0', async () => {
    // ProfileStraggler's tasks come from a console log: times, no metrics.
    const timeline = page.locator('canvas[data-testid="timeline"][data-tasks]');
    const colours = await timeline.evaluate((c) => {
      const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      const n = { delay: 0, unknown: 0 };
      for (let i = 0; i < px.length; i += 4) {
        if (px[i] === 0x80 && px[i + 1] === 0xb1 && px[i + 2] === 0xd3) n.delay++;
        if (px[i] === 0x9a && px[i + 1] === 0xa5 && px[i + 2] === 0xb1) n.unknown++;
      }
      return n;
    });
    assert.ok(colours.delay === 0 && colours.unknown > 100, `timeline pixels: ${JSON.stringify(colours)}`);
    await page.getByTestId('timeline-legend').getByText('phases unknown').waitFor();
    const cores = await page.getByTestId('executors').locator('tbody tr').first().locator('td').nth(2).textContent();
    assert.equal(cores, 'unknown');
    const stageRow = page.getByTestId('stages').locator('tbody tr').first();
    assert.match(await stageRow.textContent(), /17\.9 min.*unknown/, 'stage row: duration known, run time unknown');

    await page.goto(`${url}/#/apps/ProfileStraggler/stages/0`);
    const q = page.getByTestId('quantiles');
    await q.waitFor();
    const row = async (name) => (await q.locator('tr').filter({ hasText: name }).first().textContent()).replace(/\s+/g, ' ');
    assert.match(await row('Duration'), /17\.9 min/);
    for (const m of ['Scheduler delay', 'Run time', 'GC time']) assert.match(await row(m), /unknown/, `${m} quantiles`);
    const table = page.getByTestId('task-table');
    await table.locator('tbody tr').first().waitFor();
    const header = await table.locator('thead th').allTextContents();
    const col = (title) => header.findIndex((h) => h.startsWith(title));
    for (const tr of await table.locator('tbody tr').all()) {
      const cells = await tr.locator('td').allTextContents();
      assert.equal(cells[col('Scheduler delay')], 'unknown', `task row ${cells}`);
      assert.equal(cells[col('Run time')], 'unknown', `task row ${cells}`);
      assert.notEqual(cells[col('Duration')], 'unknown');
    }
    const byExec = await page.getByTestId('stage-executors').locator('tbody tr').first().textContent();
    assert.match(byExec, /unknown/, `by executor: ${byExec}`);
    // The task table fits its box at 1400 pixels: no column hidden.
    const fit = await table.evaluate((t) => [t.scrollWidth, t.parentElement.clientWidth]);
    assert.ok(fit[0] <= fit[1], `task table ${fit[0]} px wide in a box of ${fit[1]}`);
    await shot('n3-unknown-metrics.png');
  });

  await step('a stage with resubmitted tasks counts them alike everywhere; jobs without a JobStart', async () => {
    const app = 'application_1603128018386_7846';
    await page.goto(`${url}/#/apps/${app}`);
    // 80 jobs listed, 5 of them known only from their JobEnd: the header
    // and the tab agree.
    await page.getByTestId('app-job-count').waitFor();
    assert.equal(await page.getByTestId('app-job-count').textContent(), '80 jobs (5 without a JobStart)');
    await page.getByTestId('app-tabs').getByText('Jobs (80)').waitFor();
    // Stage 238: 230 task attempts, 3 failed; 50 ends posted again as
    // Resubmitted when their executor was lost.
    const row = page.getByTestId('stages').locator('tbody tr').filter({ has: page.locator('td:first-child', { hasText: /^238$/ }) });
    assert.match(await row.textContent(), /230 \(3 failed, 50 resubmitted\)/);
    await page.goto(`${url}/#/apps/${app}?tab=jobs`);
    const jobs = page.getByTestId('jobs');
    await jobs.locator('tbody tr').first().waitFor();
    const job20 = await jobs.locator('tbody tr').filter({ has: page.locator('td:first-child', { hasText: /^20$/ }) }).locator('td').allTextContents();
    assert.deepEqual(job20.slice(2, 4), ['unknown', 'unknown'], `job 20 (no JobStart): ${job20}`);
    await jobs.locator('tbody tr').filter({ has: page.locator('td:first-child', { hasText: /^79$/ }) }).click();
    const dag = page.getByTestId('job-detail').getByTestId('stage-dag');
    await dag.waitFor();
    const subs = await dag.locator('text.graph-sub').allTextContents();
    assert.ok(subs.some((t) => /230 tasks \(3 fail/.test(t)), `stage DAG: ${subs}`);
    await page.goto(`${url}/#/apps/${app}/stages/238`);
    await page.getByTestId('stage-task-count').waitFor();
    assert.equal(await page.getByTestId('stage-task-count').textContent(), '230 tasks (3 failed, 50 resubmitted)');
    const table = page.getByTestId('task-table');
    await table.locator('tbody tr').first().waitFor();
    assert.equal((await dataset(table)).total, '230');
    const fit = await table.evaluate((t) => [t.scrollWidth, t.parentElement.clientWidth]);
    assert.ok(fit[0] <= fit[1], `task table ${fit[0]} px wide in a box of ${fit[1]}`);
    await shot('n4-resubmitted-stage.png');
    // One job reads "1 job".
    await page.goto(`${url}/#/apps/ProfileStraggler`);
    await page.getByTestId('app-job-count').waitFor();
    assert.equal(await page.getByTestId('app-job-count').textContent(), '1 job');
  });

  await step('samples over time: a step for the recording, times in ISO UTC', async () => {
    // FastSlow's recording lasts ten seconds: the default range (all time)
    // draws it in about 200 steps, not in one of 10 s.
    await page.goto(`${url}/#/flame?query=${encodeURIComponent('{service_name="FastSlow_2024_01_16_180855"}')}`);
    const series = page.getByTestId('sample-series');
    await page.waitForFunction(() => document.querySelector('[data-testid="sample-series-plot"]')?.dataset.xTicks);
    const d = await dataset(series);
    assert.ok(Number(d.stepMs) > 0 && Number(d.stepMs) <= 100, `step ${d.stepMs} ms`);
    const ticks = (await dataset(page.getByTestId('sample-series-plot'))).xTicks.split('|').filter(Boolean);
    assert.ok(ticks.length >= 3 && ticks.every((t) => /^\d\d:\d\d:\d\d(\.\d{3})?$/.test(t)), `time axis: ${ticks}`);
    assert.equal(new Set(ticks).size, ticks.length, `ticks repeat: ${ticks}`);
    // 11:09 UTC, when the recording was made, whatever the browser's zone
    // (the test runs chromium in the machine's).
    assert.ok(ticks.every((t) => t.startsWith('11:0')), `time axis: ${ticks}`);
    await shot('n5-samples-over-time.png', series);
  });
}
