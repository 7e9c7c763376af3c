import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LineFramer, WorkerProcess } from '../lib/process.js';

test('LineFramer: lines across chunks, empty lines dropped, the rest flushed', () => {
  const framer = new LineFramer();
  assert.deepEqual(framer.push('{"a":'), []);
  assert.deepEqual(framer.push('1}\n\n{"b"'), ['{"a":1}']);
  assert.deepEqual(framer.push(':2}\n' + 'x'.repeat(200000)), ['{"b":2}']);
  assert.deepEqual(framer.flush(), ['x'.repeat(200000)]);
  assert.deepEqual(framer.flush(), []);
});

test('WorkerProcess: a UTF-8 character split across two writes arrives whole; stderr tail kept', async () => {
  const script = `
    process.stderr.write('one\\ntwo\\nthree');
    process.stdout.write(Buffer.from([0x22, 0xc3]));
    setTimeout(() => process.stdout.write(Buffer.from([0xa9, 0x22, 0x0a, 0x6c, 0x61, 0x73, 0x74])), 100);`;
  const lines = [];
  const child = new WorkerProcess(process.execPath, { args: ['-e', script], stderrLines: 2 }, (line) => lines.push(line));
  const status = await child.exited;
  assert.equal(status.code, 0);
  assert.deepEqual(lines, ['"é"', 'last']);
  assert.deepEqual(child.stderrTail, ['two', 'three']);
});

test('WorkerProcess: lines held for one write per turn arrive in order, and none is lost at the end', async () => {
  // A stand-in worker that reports, at the end of its input, the lines it read.
  const script = `
    const reads = [];
    process.stdin.on('data', (chunk) => reads.push(String(chunk).split('\\n').filter(Boolean).map((l) => JSON.parse(l).n)));
    process.stdin.on('end', () => process.stdout.write(JSON.stringify(reads) + '\\n'));`;
  const lines = [];
  const child = new WorkerProcess(process.execPath, { args: ['-e', script] }, (line) => lines.push(line));
  for (let n = 0; n < 20; n++) child.send({ n });
  await new Promise((resolve) => setTimeout(resolve, 50));
  child.send({ n: 20 });
  child.endInput(); // in the same turn as the last line: it still goes first
  const status = await child.exited;
  assert.equal(status.code, 0);
  const reads = JSON.parse(lines[0]);
  assert.deepEqual(reads.flat(), [...Array(21).keys()]);
});

test('WorkerProcess: a binary that cannot start ends with an error', async () => {
  const child = new WorkerProcess('/nonexistent/image-worker', {}, () => {});
  const status = await child.exited;
  assert.ok(status.error);
});
