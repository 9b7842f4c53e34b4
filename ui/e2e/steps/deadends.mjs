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
}
