// The History Server's SQL page, as sparkprof draws it: each operator
// with its SQL metrics, WholeStageCodegen boxes, zoom and fit, the picked
// execution in the page's link; a stage's accumulators.
import assert from 'node:assert/strict';
import { dataset } from '../lib.mjs';

export async function run({ page, step, shot, url }) {
  await step("the SQL plan: operators with their metrics, codegen boxes, zoom, the execution in the link", async () => {
    const app = 'local-1642039451826';
    await page.goto(`${url}/#/apps/${app}?tab=sql`);
    const sql = page.getByTestId('sql');
    await sql.locator('tbody tr').first().waitFor();
    await sql.locator('tbody tr').first().click();
    await page.waitForFunction(() => /[?&]sql=\d+/.test(window.location.hash));
    // The link opens the same execution.
    await page.reload();
    const plan = page.getByTestId('sql-detail').getByTestId('sql-plan');
    await plan.waitFor();
    // range(0, 100): its Range operator produced 100 rows.
    const lines = await plan.locator('text.graph-metric').allTextContents();
    assert.ok(lines.includes('number of output rows: 100'), `operator metrics: ${lines.slice(0, 12)}`);
    assert.ok(lines.some((l) => /^duration: \d/.test(l)) || (await plan.locator('[data-testid="graph-cluster"] title').allTextContents()).some((t) => /duration: \d/.test(t)), 'a codegen duration');
    const d = await dataset(plan);
    assert.ok(Number(d.clusters) >= 1, `WholeStageCodegen boxes: ${d.clusters}`);
    // Fit: the plan fits its box; zoom in and out, back to fit.
    const fits = await plan.evaluate((svg) => svg.getBoundingClientRect().width <= svg.parentElement.clientWidth + 1);
    assert.ok(fits && Number(d.scale) <= 1, `plan at scale ${d.scale} fits: ${fits}`);
    await page.getByTestId('graph-zoom-in').click();
    assert.ok(Number((await dataset(plan)).scale) > Number(d.scale));
    await page.getByTestId('graph-fit').click();
    assert.equal((await dataset(plan)).scale, d.scale);
    const table = page.getByTestId('sql-metrics');
    assert.ok((await table.locator('tbody tr').count()) >= 5, 'the operator metrics table');
    await shot('s1-sql-plan-metrics.png');
  });

  await step('an operator\'s SQL metrics per task: total, min, med, max and the task of the max, as the History Server', async () => {
    const table = page.getByTestId('sql-metrics');
    // The shuffle of range(0, 100) in 8 tasks: 12 or 13 records each; its
    // write time is a nsTiming metric, which the table writes in the
    // History Server's units, with the task of its maximum.
    const rows = await table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
    const header = await table.locator('thead th').allTextContents();
    assert.ok(!rows.flat().some((c) => /NaN|undefined/.test(c)), 'no figure is NaN or undefined');
    assert.deepEqual(header.slice(2, 7), ['Total', 'Min', 'Median', 'Max', 'Max at (stage.attempt: task)']);
    const records = rows.find((r) => r[1] === 'shuffle records written' && r[2] === '100');
    assert.ok(records && records[3] === '', `a count has its total only: ${records}`);
    const write = rows.find((r) => r[1] === 'shuffle write time' && /^stage 0\.0: task \d+$/.test(r[6]));
    assert.ok(write, `shuffle write time of stage 0 with its max task: ${JSON.stringify(rows.filter((r) => r[1] === 'shuffle write time'))}`);
    for (const v of write.slice(2, 6)) assert.match(v, /^\d+(\.\d)? (ms|s)$/, `a time in the History Server's units: ${write}`);
    // Its row's tooltip is the History Server's text.
    const title = await table.locator('tbody tr', { hasText: write[6] }).first().getAttribute('title');
    assert.match(title, /^shuffle write time total \(min, med, max \(stageId: taskId\)\): \d+ ms \(\d+ ms, \d+ ms, \d+ ms \(stage 0\.0: task \d+\)\)$/);
    await shot('s1b-sql-metrics-min-med-max.png', page.getByTestId('sql-detail').locator('details').first());
  });

  await step("a stage's page draws its event timeline", async () => {
    await page.goto(`${url}/#/apps/application_1603128018386_7846/stages/238`);
    const timeline = page.getByTestId('stage-timeline').locator('canvas[data-testid="timeline"][data-tasks]');
    await timeline.waitFor();
    const d = await dataset(timeline);
    // Its 230 task attempts, on the executors that ran them.
    assert.equal(d.tasks, '230');
    assert.equal(d.stages, '1');
    await shot('s2-stage-timeline.png', page.getByTestId('stage-timeline'));
  });
}
