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
}
