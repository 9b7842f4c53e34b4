// What the server's pages show of its uploads: a running app refreshed by
// hand and automatically, two runs of an app compared, one service over
// two ranges, the agents, and a server that asks for a token.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ingest } from '../lib.mjs';

export async function run({ page, browser, step, shot, url, testdata, startServer }) {
  await step('a running app: the last 5 minutes, refreshed by hand and automatically', async () => {
    const now = Math.floor(Date.now() / 1000);
    const send = async (body, ago) => {
      const q = { name: 'live-app{}', from: String(now - ago - 10), until: String(now - ago) };
      assert.equal((await ingest(url, q, body)).status, 200);
    };
    await send('main;live 5\n', 30);
    await send('main;old 100\n', 7200); // two hours ago: not in the range
    await page.goto(`${url}/#/flame?query=${encodeURIComponent('{service_name="live-app"}')}`);
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
    await head.getByText(/total 10 ·/).waitFor();
    await page.getByTestId('auto-refresh').uncheck();
  });

  await step('compare two runs of one app', async () => {
    // JavaUDFJob's event log, and a second run: the same log under another app id.
    const log = readFileSync(path.join(testdata, 'eventlogs/nvidia/java_udf_eventlog'), 'utf8');
    for (const [name, body] of [['java_udf', log], ['java_udf_rerun', log.replaceAll('local-1774375930687', 'local-1774375930999')]]) {
      const imp = await fetch(`${url}/api/v1/import?path=${name}&kind=eventlog`, { method: 'POST', body });
      assert.equal(imp.status, 200, await imp.text());
    }
    for (const [id, body] of [['local-1774375930687', 'main;udf 2\n'], ['local-1774375930999', 'main;udf 6\n']]) {
      const q = { name: `JavaUDFJob{spark_app_id=${id}}` };
      assert.equal((await ingest(url, q, body)).status, 200);
    }
    await page.goto(`${url}/#/apps/local-1774375930999`);
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
      assert.equal((await ingest(url, q, body)).status, 200);
    }
    const sel = '{service_name="ranged-diff"}';
    const q = new URLSearchParams({ base: sel, next: sel, baseFrom: String(t0 - 60), baseUntil: String(t0 + 60), nextFrom: String(t0 + 3540), nextUntil: String(t0 + 3660) });
    await page.goto(`${url}/#/diff?${q}`);
    await page.getByTestId('diff').getByText('baseline 2 · comparison 6').waitFor();
  });

  await step('agents page', async () => {
    // One executor's upload after it dropped two windows, sent again as
    // after a lost answer, then a bad one.
    const send = (q, body, headers) => ingest(url, q, body, headers);
    for (let i = 0; i < 2; i++) {
      const r = await send({ name: 'e2e{executorId=7}', spyName: 'sparkprof', dropped: '2' }, 'main;work 1\n', { 'Idempotency-Key': 'e2e-window-1' });
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('Idempotent-Replayed'), i === 0 ? null : 'true');
    }
    assert.equal((await send({ name: 'e2e{executorId=7}', format: 'pprof' }, 'not pprof')).status, 422);
    // An executor whose clock is two hours behind the server's.
    const behind = Math.floor(Date.now() / 1000) - 7200;
    assert.equal((await send({ name: 'e2e{executorId=8}', from: String(behind - 10), until: String(behind) }, 'main;work 1\n')).status, 200);
    await page.goto(`${url}/#/agents`);
    await page.getByText('Every sender of profiles').waitFor();
    const e2eRows = page.getByTestId('agents').locator('tbody tr').filter({ hasText: 'e2e' });
    const agentRow = e2eRows.filter({ hasText: 'sparkprof' }); // executor 7's: its client
    const row = await agentRow.textContent();
    for (const want of ['sparkprof', 'not a valid pprof profile']) assert.ok(row.includes(want), `agents row lacks ${want}: ${row}`);
    assert.match(row, /\(\d+ ms ago\)|\([\d.]+ s ago\)/, `agents row says how long ago it last sent: ${row}`);
    assert.equal(await agentRow.getByTestId('retried').textContent(), '1', 'the agents row counts the upload sent again');
    const skewed = e2eRows.filter({ hasNot: page.getByText('sparkprof') }).getByTestId('window-lag');
    assert.match(await skewed.textContent(), /^2\.0 h \(clock off\?\)$/, 'the agents row of a sender two hours behind says its clock looks off');
    await shot('8-agents.png');
  });

  await step('a server with a token: sign in, then the UI works', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sparkprof-e2e-token-'));
    const tokenFile = path.join(dir, 'token');
    writeFileSync(tokenFile, 's3cret\n');
    const locked = await startServer(['--auth-token-file', tokenFile]);
    try {
      const guest = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
      guest.setDefaultTimeout(5 * 60_000);
      const p = await guest.newPage();
      await p.goto(`${locked.url}/#/agents`);
      await p.locator('input[name=token]').fill('wrong');
      await p.locator('input[type=submit]').click();
      await p.getByText("That is not one of the server's tokens.").waitFor();
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
}
