// Unit tests of the SQL metrics' text: the History Server's units and
// rounding, and its min/med/max line.
import test from 'node:test';
import assert from 'node:assert/strict';
import { sqlValue, sqlMetricText } from '../src/sqlMetrics.js';

test('values in the History Server units', () => {
  for (const [typ, v, want] of [
    ['sum', 1234567, '1,234,567'],
    ['size', 2047, '2047.0 B'],
    ['size', 2048, '2.0 KiB'],
    ['size', 10 * 1024 * 1024, '10.0 MiB'],
    ['size', 1572864 * 3, '4.5 MiB'],
    ['timing', 999, '999 ms'],
    ['timing', 1250, '1.3 s'],
    ['timing', 90000, '1.5 m'],
    ['timing', 5400000, '1.50 h'],
    ['nsTiming', 32402787, '32 ms'],
    ['average', 15, '1.5'],
    ['average', 12340, '1,234'],
  ]) {
    assert.equal(sqlValue(typ, v), want, `${typ} ${v}`);
  }
});

test('a metric of several tasks: total, min, med, max and the task of the max', () => {
  for (const [m, header, text] of [
    [{ known: true, type: 'sum', total: 100, values: 8 }, '', '100'],
    [{ known: true, type: 'size', total: 4096, values: 1 }, '', '4.0 KiB'],
    [
      { known: true, type: 'timing', total: 216, values: 8, min: 20, med: 27, max: 33, maxAt: { stageId: 0, stageAttempt: 0, taskId: 5 } },
      'total (min, med, max (stageId: taskId))',
      '216 ms (20 ms, 27 ms, 33 ms (stage 0.0: task 5))',
    ],
    [{ known: true, type: 'average', total: 30, values: 2, min: 10, med: 20, max: 20 }, '(min, med, max (stageId: taskId))', '(1, 2, 2 (driver))'],
    [{ known: false, type: 'size' }, '', 'not reported'],
    // The API leaves out zeros.
    [{ known: true, type: 'timing', values: 8, max: 2, maxAt: { stageId: 2, stageAttempt: 0, taskId: 14 } }, 'total (min, med, max (stageId: taskId))', '0 ms (0 ms, 0 ms, 2 ms (stage 2.0: task 14))'],
  ]) {
    assert.deepEqual(sqlMetricText(m), { header, text });
  }
});
