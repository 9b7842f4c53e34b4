// Links that led nowhere: each view is offered where the app has what it
// shows, and an empty one says what the app has instead.
import assert from 'node:assert/strict';

export async function run({ page, step, shot, url }) {
  const q = (s) => encodeURIComponent(s);

  await step("an app's views are offered for the profile types it has", async () => {
    // ProfileStraggler has Uber stack samples: a latency view, no heap.
    await page.goto(`${url}/#/apps/ProfileStraggler`);
    const links = page.getByTestId('view-links');
    await links.getByText('latency view').waitFor();
    assert.equal(await links.getByText('heap view').count(), 0, 'a heap view of an app without allocation samples');
    // An app without profiles offers no slowest-vs-rest diff (a 404).
    await page.goto(`${url}/#/apps/application_1603128018386_7846?stage=238`);
    await page.getByText("stage 238's page").waitFor();
    assert.equal(await page.getByTestId('slow-vs-rest').count(), 0, 'slow vs rest offered without profiles');
  });

  await step('a view of a type the app lacks says what it has and offers it', async () => {
    await page.goto(`${url}/#/heap?query=${q('{service_name="ProfileStraggler"}')}`);
    const empty = page.getByTestId('flame-empty');
    await empty.waitFor();
    const text = await empty.textContent();
    assert.match(text, /no alloc_bytes samples: it was profiled for samples \(count\)/, text);
    assert.ok(!/agent/i.test(text), `the empty heap page blames the agents: ${text}`);
    await shot('d1-heap-offers.png');
    await empty.getByTestId('offered-type').first().click();
    await page.getByTestId('flame').getByTestId('flamegraph-canvas').waitFor();
    assert.match(page.url(), /type=samples/);
  });

  await step("the straggler finding links to its task's flame graph", async () => {
    await page.goto(`${url}/#/apps/ProfileStraggler`);
    const straggler = page.getByTestId('findings').locator('li').filter({ hasText: '7.8x the median' });
    const link = straggler.getByTestId('task-flame');
    await link.waitFor();
    assert.equal(await link.textContent(), 'the flame graph of task 0');
    await link.click();
    await page.getByTestId('flame').getByTestId('flamegraph-canvas').waitFor();
    const params = new URLSearchParams(page.url().split('?')[1]);
    assert.match(params.get('query'), /spark_task_id="0"/);
    const total = Number(await page.getByTestId('flamegraph').getAttribute('data-total'));
    assert.ok(total > 0, `task 0's flame graph: ${total} samples`);
  });

  await step("a recommendation's link zooms to its frame, marked; names read as Scala writes them", async () => {
    await page.goto(`${url}/#/apps/ProfileStraggler`);
    const rec = page.getByTestId('recommendation').filter({ hasText: 'list-append' });
    await rec.waitFor();
    // Scala's :+, not the JVM's $colon$plus, in the findings as in the graph.
    assert.match(await rec.textContent(), /SeqLike\$class\.:\+ called from/);
    assert.ok(!(await page.getByTestId('findings').textContent()).includes('$colon'), 'findings print $colon');
    await rec.getByTestId('recommendation-flame').click();
    const graph = page.getByTestId('flame').getByTestId('flamegraph');
    await graph.getByTestId('flamegraph-canvas').waitFor();
    // The search holds the frame and marks it; the graph is zoomed to it,
    // 25 levels down, its path above the graph.
    assert.match(await graph.getByTestId('flame-search').inputValue(), /colon/);
    await page.waitForFunction(() => Number(document.querySelector('[data-testid="flame"] [data-testid="flamegraph"]').dataset.matched) > 0);
    const crumbs = await graph.getByTestId('flame-crumbs').locator('a').allTextContents();
    assert.ok(crumbs.length > 20 && crumbs[crumbs.length - 1].endsWith('SeqLike$class.:+'), `zoomed to ${crumbs[crumbs.length - 1]} (${crumbs.length} levels)`);
    await shot('d2-recommendation-zoomed.png');
  });

  await step('the diff page picks the type and thread state, exports both sides, sorts by change', async () => {
    // Two recordings compared on wall-clock time, then on CPU.
    const base = '{service_name="dump1"}';
    const next = '{service_name="dump2"}';
    await page.goto(`${url}/#/diff?base=${q(base)}&next=${q(next)}`);
    const diff = page.getByTestId('diff');
    await diff.getByTestId('flamegraph-canvas').waitFor();
    const types = await page.getByTestId('diff-type').locator('option').allTextContents();
    assert.ok(types.length >= 2, `types offered: ${types}`);
    const other = types.map((t) => t.split(' ')[0]).find((t) => t !== (types[0] || '').split(' ')[0]);
    await page.getByTestId('diff-type').selectOption(other);
    await page.waitForFunction((t) => window.location.hash.includes(`type=${t}`), other);
    await page.getByTestId('diff-state').selectOption('RUNNABLE');
    await page.waitForFunction(() => window.location.hash.includes('state=RUNNABLE'));
    await diff.getByTestId('flamegraph-canvas').waitFor();
    // Each side exports as pprof, for go tool pprof -diff_base.
    const exports = await page.getByTestId('diff-exports').getByTestId('export-pprof').evaluateAll((as) => as.map((a) => a.getAttribute('href')));
    assert.equal(exports.length, 2);
    assert.ok(exports[0].includes(encodeURIComponent(base).replace(/%20/g, '+')) || decodeURIComponent(exports[0]).includes('dump1'), exports[0]);
    assert.ok(exports.every((h) => h.includes('state=RUNNABLE') && h.includes(`type=${other}`)), `exports ${exports}`);
    for (const h of exports) assert.equal((await fetch(new URL(h, url))).status, 200, h);
    // The table: total first, then the functions that changed most.
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="diff"] [data-testid="table-view"] tbody tr:not([aria-hidden])').length > 3);
    const rows = await diff.getByTestId('table-view').locator('tbody tr:not([aria-hidden])').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
    assert.equal(rows[0][0], 'total');
    const change = rows.slice(1).map((r) => Math.abs(parseFloat(r[3])));
    assert.ok(change.every((c, i) => i === 0 || c <= change[i - 1]), `changes ${change.slice(0, 10)}`);
    await shot('d3-diff.png');
  });
}
