// What the History Server shows of an app, inside the app: its jobs with
// their stage DAGs, its SQL executions with their plans, its environment,
// and a stage's page: quantiles, tasks per executor, the task table
// sorted and paged, its flame graph; last, the stage page and timeline of
// a generated app of 222,880 tasks.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { dataset } from '../lib.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../..');
const failures = 'application_1603128018386_7846';

// sh runs a command to its end and fails the step if it fails.
function sh(cmd, args, opts) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', ...opts });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

export async function run({ page, step, shot, url, bin, testdata }) {
  await step('jobs with their stages and the stage DAG', async () => {
    await page.goto(`${url}/#/apps/${failures}?tab=jobs`);
    const jobs = page.getByTestId('jobs');
    await jobs.locator('tbody tr').first().waitFor();
    assert.ok((await jobs.locator('tbody tr').count()) >= 75, 'the 75 jobs');
    // Job 3 read two stages' output already there (skipped) and ran one.
    await jobs.locator('tbody tr').filter({ has: page.locator('td:first-child', { hasText: /^3$/ }) }).click();
    const dag = page.getByTestId('job-detail').getByTestId('stage-dag');
    await dag.waitFor();
    assert.deepEqual([(await dataset(dag)).nodes, (await dataset(dag)).edges], ['3', '2']);
    assert.match(page.url(), /job=3/);
    await shot('11-jobs-dag.png');
    // A stage that ran links to its page.
    await dag.locator('a').first().click();
    await page.getByTestId('stage-title').waitFor();
    assert.match(page.url(), new RegExp(`/apps/${failures}/stages/\\d+`));
  });

  await step('the SQL tab: each execution with its plan and its stages', async () => {
    await page.goto(`${url}/#/apps/${failures}?tab=sql`);
    const sql = page.getByTestId('sql');
    await sql.locator('tbody tr').first().waitFor();
    assert.equal(await sql.locator('tbody tr').count(), 28, 'the 28 SQL executions');
    await sql.locator('tbody tr').nth(3).click();
    const plan = page.getByTestId('sql-detail').getByTestId('sql-plan');
    await plan.waitFor();
    assert.ok(Number((await dataset(plan)).nodes) >= 8, 'the plan of SQL 3');
    assert.match(await page.getByTestId('sql-plan-text').textContent(), /^== Physical Plan ==/);
    await page.getByTestId('sql-detail').getByTestId('stage-dag').waitFor();
    await shot('12-sql.png');
  });

  await step('the environment', async () => {
    await page.goto(`${url}/#/apps/${failures}?tab=environment`);
    const spark = page.getByTestId('env-spark');
    await spark.locator('tbody tr').first().waitFor();
    assert.ok((await spark.locator('tbody tr').count()) > 20, 'Spark properties');
    await page.getByTestId('env-search').fill('spark.executor.memory');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="env-spark"] tbody tr').length <= 3);
    await spark.getByText('spark.executor.memory', { exact: true }).waitFor();
    await shot('13-environment.png');
  });

  await step("a stage's page: quantiles, executors, tasks sorted and paged", async () => {
    await page.goto(`${url}/#/apps/local-1642039451826/stages/0`);
    await page.getByTestId('stage-title').getByText('count at <console>:23').waitFor();
    const quantiles = page.getByTestId('quantiles');
    // The History Server's quantiles of the stage's eight durations.
    const duration = await quantiles.locator('tbody tr').filter({ hasText: /^Duration/ }).textContent();
    assert.match(duration, /^Duration\s*461 ms\s*466 ms\s*467 ms\s*468 ms\s*480 ms$/, duration);
    await page.getByTestId('stage-executors').waitFor();
    const table = page.getByTestId('task-table');
    await table.locator('tbody tr').first().waitFor();
    assert.equal((await dataset(table)).total, '8');
    await shot('14-stage.png');
  });

  await step('the stage page of a generated app of 222,880 tasks stays responsive', async () => {
    // The tool the benchmarks generate it with: the corpus log's task
    // events again and again with fresh ids, 1 GB in all.
    const dir = mkdtempSync(path.join(tmpdir(), 'sparkprof-e2e-big-'));
    try {
      const log = path.join(dir, 'local-1642039451826');
      sh('go', ['run', './bench/eventlog/tool', 'gen', '-size', '1G', '-o', log, path.join(testdata, 'eventlogs/apache/local-1642039451826')], { cwd: root });
      sh(bin, ['import', '--server', url, log]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    await page.goto(`${url}/#/apps/local-1642039451826/stages/2`);
    const table = page.getByTestId('task-table');
    await page.waitForFunction(() => Number(document.querySelector('[data-testid="task-table"]')?.dataset.total) > 50000);
    assert.equal((await dataset(table)).total, '63680');
    assert.equal(await table.locator('tbody tr').count(), 100, 'a page of 100 tasks');
    // Sort by duration, longest first, then the next page: each from the server.
    await table.locator('th', { hasText: 'Duration' }).click();
    await page.waitForFunction(() => document.querySelector('[data-testid="task-table"]').dataset.sort === 'duration desc');
    const ms = (s) => parseFloat(s) * ({ ms: 1, s: 1e3, min: 6e4, h: 3.6e6 }[s.split(' ')[1]] || NaN);
    const durations = (await table.locator('tbody tr td:nth-child(9)').allTextContents()).map(ms);
    assert.ok(durations.length === 100 && durations.every((d, i) => i === 0 || d <= durations[i - 1]), `durations ${durations}`);
    await page.getByTestId('task-next').click();
    await page.waitForFunction(() => document.querySelector('[data-testid="task-table"]').dataset.page === '1');
    assert.match(await page.getByTestId('task-page').textContent(), /page 2 of 637/);
    assert.match(await page.getByTestId('quantiles').textContent(), /63,680 successful tasks/);
    await shot('15-stage-222880.png');
    // The app's page draws every task on its timeline.
    await page.goto(`${url}/#/apps/local-1642039451826`);
    await page.waitForFunction(() => document.querySelector('canvas[data-testid="timeline"]')?.dataset.tasks === '222880');
    await shot('15-app-222880.png', page.locator('.timeline'));
  });
}
