// Unit tests of the timeline's time axis.
import test from 'node:test';
import assert from 'node:assert/strict';
import { idleStretches, makeScale, taskSpans, ticks, BAND } from '../src/timeScale.js';

test('stretches without a running task are found, short ones kept', () => {
  const tasks = [
    { launchMs: 100, finishMs: 200 },
    { launchMs: 150, finishMs: 300 },
    { launchMs: 1000, finishMs: 1100 },
    { launchMs: 1105, finishMs: 0 }, // running: until the view's end
  ];
  const spans = taskSpans([...tasks].reverse(), 2000);
  assert.deepEqual(idleStretches(spans, 0, 2000, 50), [[0, 100], [300, 1000]]);
  assert.deepEqual(idleStretches(spans, 0, 2000, 500), [[300, 1000]]);
  assert.deepEqual(idleStretches(spans, 1200, 2000, 50), []);
  assert.deepEqual(idleStretches(taskSpans([], 2000), 0, 2000, 50), []);
});

test('a compressed stretch is a band; the rest stays linear and the scale inverts', () => {
  const sc = makeScale(0, 1000, 100, 600, [[100, 700]]);
  const band = sc.segments.find((s) => s.compressed);
  assert.equal(band.x1 - band.x0, BAND);
  // 400 ms of linear time over 600 - 64 pixels.
  const perMs = (600 - BAND) / 400;
  assert.equal(sc.x(0), 100);
  assert.ok(Math.abs(sc.x(100) - (100 + 100 * perMs)) < 1e-9);
  assert.ok(Math.abs(sc.x(700) - (100 + 100 * perMs + BAND)) < 1e-9);
  assert.ok(Math.abs(sc.x(1000) - 700) < 1e-9);
  for (const t of [0, 50, 100, 400, 700, 999]) assert.ok(Math.abs(sc.t(sc.x(t)) - t) < 1e-6, `t(x(${t}))`);
});

test('ticks fall in the linear stretches, labelled from the origin', () => {
  const sc = makeScale(60000, 180000, 0, 1200, [], 0);
  const ts = ticks(sc);
  assert.ok(ts.length >= 5, `${ts.length} ticks`);
  assert.equal(ts[0].label, '60.0 s');
  const gapped = makeScale(0, 1000, 0, 600, [[100, 900]]);
  for (const t of ticks(gapped, 20)) assert.ok(t.t <= 100 || t.t >= 900, `tick at ${t.t} in the band`);
});
