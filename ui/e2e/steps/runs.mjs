// An app's attempts, kept apart as the History Server keeps them; and a
// recurring job's runs: the jobs page lists a corpus app and a later run
// of it, generated from the same log with every duration twice as long
// (another app id, a day later); the compare page matches every stage and
// splits the change over its causes; the later run's page links to it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const first = 'local-1642039451826';
const later = 'local-1642039451827';
const slower = 2;

// laterRun rewrites an event log as a later, slower run: the app id
// replaced, and every time (epoch ms, after the app's start) moved a day
// on and stretched from the start by slower.
function laterRun(text) {
  const start = Math.min(...[...text.matchAll(/"(?:Timestamp|[A-Za-z ]*Time|time)":(\d{13})/g)].map((m) => Number(m[1])));
  const day = 86_400_000;
  const stretch = (v) => Math.round(start + day + (v - start) * slower);
  const walk = (v, key) => {
    if (Array.isArray(v)) return v.map((x) => walk(x, key));
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, k)]));
    if (typeof v === 'number' && /Time$|^Timestamp$|^time$/.test(key) && v >= start) return stretch(v);
    return v;
  };
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.stringify(walk(JSON.parse(l), '')).replaceAll(first, later))
    .join('\n');
}

export async function run({ page, step, shot, url, bin, testdata }) {
  await step('an app’s attempts, each with its own pages', async () => {
    const id = 'local-1430917381535';
    const r = spawnSync(bin, ['import', '--server', url, ...['_1', '_2'].map((a) => path.join(testdata, 'eventlogs/apache', id + a))], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    await page.goto(`${url}/#/`);
    const links = page.getByTestId('apps').locator('tbody tr').filter({ hasText: id }).getByTestId('attempt-links');
    await links.waitFor();
    assert.deepEqual(await links.locator('a').allTextContents(), ['1', '2']);
    await links.locator('a', { hasText: '1' }).click();
    const title = page.getByTestId('app-title');
    await title.waitFor();
    assert.match(await title.textContent(), /attempt 1/);
    const attempts = page.getByTestId('app-attempts');
    assert.match(await attempts.textContent(), /Attempts: 1 .* · 2 /);
    // The other attempt is a link; this one is not.
    await attempts.locator('a', { hasText: '2' }).click();
    await page.waitForFunction(() => /attempt 2/.test(document.querySelector('[data-testid="app-title"]')?.textContent || ''));
    assert.match(page.url(), /appAttempt=2/);
    await shot('16-attempts.png');
  });

  await step('a job’s runs, and the later run compared with the first', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sparkprof-e2e-runs-'));
    try {
      const log = path.join(dir, later);
      writeFileSync(log, laterRun(readFileSync(path.join(testdata, 'eventlogs/apache', first), 'utf8')));
      const r = spawnSync(bin, ['import', '--server', url, log], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // Both are runs of the job of their name, Spark shell, with the other
    // corpus apps of that name.
    await page.goto(`${url}/#/jobs`);
    const row = page.getByTestId('jobs-list').locator('tbody tr').filter({ hasText: 'Spark shell' });
    await row.waitFor();
    assert.ok(Number(await row.getByTestId('duration-sparkline').evaluate((e) => e.dataset.points)) >= 2, 'a point a run');
    await shot('17-jobs.png');
    // The later run regressed: its finding links to the comparison, as
    // the page's link to the run before it does.
    await page.goto(`${url}/#/apps/${later}`);
    await page.getByTestId('regression').locator('a').click();
    const title = page.getByTestId('compare-title');
    await title.waitFor();
    assert.match(page.url(), new RegExp(`old=${first}&new=${later}`));
    await page.goto(`${url}/#/apps/${later}`);
    await page.getByTestId('compare-previous').click();
    await title.waitFor();
    assert.match(page.url(), new RegExp(`old=${first}&new=${later}`));
    assert.match(await title.textContent(), /\(2\.00×/);
    const stages = page.getByTestId('compare-stages');
    const matches = await stages.locator('tbody tr td:nth-child(3)').allTextContents();
    assert.ok(matches.length > 0 && matches.every((m) => m === '1.00'), `every stage of the same log matched at 1.00: ${matches}`);
    assert.ok((await page.getByTestId('compare-causes').locator('tbody tr').count()) > 0, 'the causes of the change');
    await shot('18-compare.png');
  });
}
