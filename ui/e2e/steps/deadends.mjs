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
}
