// Unit tests of the UI's pure modules, run by `node --test` (make ui-test).
import test from 'node:test';
import assert from 'node:assert/strict';
import { readableName, shortenFront } from '../src/names.js';

test('readableName writes JVM descriptors and Scala operators as Java and Scala do', () => {
  const cases = [
    ['[B', 'byte[]'],
    ['[[I', 'int[][]'],
    ['[Ljava.lang.Object;', 'java.lang.Object[]'],
    ['[Ljava/lang/String;', 'java.lang.String[]'],
    ['java.lang.String.<init>([BII)V', 'java.lang.String.<init>(byte[], int, int)'],
    ['scala.collection.SeqLike$class.$colon$plus', 'scala.collection.SeqLike$class.:+'],
    ['scala.collection.mutable.ListBuffer.$plus$plus$eq', 'scala.collection.mutable.ListBuffer.++='],
    ['profile.sparkjobs.JobStraggler$$anonfun$3.apply', 'profile.sparkjobs.JobStraggler$$anonfun$3.apply'],
    ['main (app.py:12)', 'main (app.py:12)'],
    ['[B garbage', '[B garbage'],
    ['', ''],
  ];
  for (const [raw, want] of cases) assert.equal(readableName(raw), want, raw);
});

test('shortenFront drops the package, not the method', () => {
  const name = 'io.grpc.netty.shaded.io.netty.channel.nio.NioEventLoop.run';
  assert.equal(shortenFront(name, 100), name);
  const short = shortenFront(name, 36);
  assert.ok(short.length <= 36, short);
  assert.ok(short.startsWith('…') && short.endsWith('channel.nio.NioEventLoop.run'), short);
  assert.equal(shortenFront(name, 1), '…');
});

test('readableText decodes the JVM names in a sentence, and only them', async () => {
  const { readableText } = await import('../src/names.js');
  assert.equal(
    readableText('100% in scala.collection.SeqLike$class.$colon$plus called from profile.sparkjobs.JobStraggler$$anonfun$3.apply, 79 %.'),
    '100% in scala.collection.SeqLike$class.:+ called from profile.sparkjobs.JobStraggler$$anonfun$3.apply, 79 %.',
  );
  assert.equal(readableText('stage 0: task 0 ran 17.9 min, 7.8x the median'), 'stage 0: task 0 ran 17.9 min, 7.8x the median');
});
