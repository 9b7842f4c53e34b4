// Unit tests of the timeline's rows.
import test from 'node:test';
import assert from 'node:assert/strict';
import { layout, TASK_ROW } from '../src/timelineLayout.js';

// rep is a report of one stage whose executor 1 ran n tasks at once.
function rep(n) {
  const tasks = Array.from({ length: n }, (_, i) => ({ taskId: i, stageId: 0, executorId: '1', launchMs: 1000, finishMs: 2000 + i }));
  return { app: { startMs: 0, endMs: 3000 }, jobs: [], stages: [{ stageId: 0, submitMs: 1000, completeMs: 2500 }], executors: [], tasks };
}

test("an executor's few task lanes are tall enough to read, its many the thinnest", () => {
  const heights = (n) => layout(rep(n)).execRows[0].laneH;
  assert.equal(heights(1), 12);
  assert.equal(heights(3), 12);
  assert.equal(heights(5), 8);
  assert.equal(heights(8), TASK_ROW);
  assert.equal(heights(24), TASK_ROW);
  // The band holds its lanes.
  const r = layout(rep(3)).execRows[0];
  assert.ok(r.h >= 3 * r.laneH + 4, `band ${r.h} px for 3 lanes of ${r.laneH}`);
});
