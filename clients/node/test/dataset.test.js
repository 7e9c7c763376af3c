// downloadDataset against the built worker and the loopback server: a CSV table and rows from an
// async iterable into WebDataset, Parquet and folder shards, read back with `tar` and the file
// system; the stats summed; opt-outs honoured by default and turned off; bad options refused
// before anything runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { downloadDataset } from '../index.js';
import { binaryPath, withSetup as withSetupIn } from './loopback.js';

const binary = binaryPath();

const withSetup = (body) => withSetupIn(body, 'iw-node-dataset-');

test('a CSV table becomes WebDataset shards with their Parquet tables and stats', () => withSetup(async (server, dir) => {
  const rows = [['testorig.jpg', 'a boat, at sea'], ['missing.jpg', 'gone'], ['test.webp', 'a webp'], ['testorig.jpg?robots=noai', 'opted out']];
  const table = join(dir, 'rows.csv');
  writeFileSync(table, 'url,caption,license\n' + rows.map(([name, caption], i) => `${server.url(`/files/${name}`)},"${caption}",l${i}`).join('\n') + '\n');
  const out = join(dir, 'shards');
  const result = await downloadDataset(table, out, {
    captionCol: 'caption', saveColumns: ['license'], shardSize: 2, binary, width: 40, height: 40, format: 'jpeg', concurrency: 4,
  });
  assert.equal(result.count, 4);
  assert.equal(result.successes, 2);
  assert.equal(result.failed, 2);
  assert.deepEqual(result.status, { success: 2, failed_to_download: 1, opted_out: 1 });
  assert.deepEqual(result.errors, { InvalidDownloadStatusCode: 1, OptedOut: 1 });
  assert.equal(result.exitStatus, 1);
  assert.deepEqual(result.shards, [join(out, '00000.tar'), join(out, '00001.tar')]);
  assert.deepEqual(readdirSync(out).sort(), ['00000.parquet', '00000.tar', '00000_stats.json', '00001.parquet', '00001.tar', '00001_stats.json']);
  assert.deepEqual(execFileSync('tar', ['-tf', result.shards[0]], { encoding: 'utf8' }).trim().split('\n'), ['000000.jpg', '000000.txt', '000000.json']);
  const meta = JSON.parse(execFileSync('tar', ['-xOf', result.shards[0], '000000.json'], { encoding: 'utf8' }));
  assert.equal(meta.caption, 'a boat, at sea');
  assert.equal(meta.license, 'l0');
  assert.deepEqual([meta.width, meta.height, meta.original_width, meta.original_height], [40, 40, 227, 149]);
  assert.equal(readFileSync(join(out, '00000.parquet')).subarray(0, 4).toString(), 'PAR1');
  // A shard's Parquet table is a table of URLs and captions too: read by the worker, row for row.
  const again = await downloadDataset(join(out, '00001.parquet'), join(dir, 'again'), {
    captionCol: 'caption', saveColumns: ['status'], shardSize: 5, binary, disallowedHeaderDirectives: [],
  });
  assert.deepEqual([again.count, again.successes, again.exitStatus], [2, 2, 0]);
  const meta2 = JSON.parse(execFileSync('tar', ['-xOf', again.shards[0], '000001.json'], { encoding: 'utf8' }));
  assert.deepEqual([meta2.caption, meta2.status], ['opted out', 'success']);
}));

test('rows from an async iterable, Parquet shards numbered from firstShard, opt-outs turned off', () => withSetup(async (server, dir) => {
  async function* rows() {
    yield { url: server.url('/files/testorig.jpg?robots=noai') };
    yield { url: server.url('/files/test.webp') };
  }
  const out = join(dir, 'part');
  const result = await downloadDataset(rows(), out, {
    outputFormat: 'parquet', shardSize: 5, firstShard: 3, binary, disallowedHeaderDirectives: [], maxPixelSize: 30, format: 'png',
  });
  assert.deepEqual([result.count, result.successes, result.exitStatus], [2, 2, 0]);
  assert.deepEqual(readdirSync(out).sort(), ['00003.parquet', '00003_stats.json']);
  const parquet = readFileSync(join(out, '00003.parquet'));
  assert.ok(parquet.includes(Buffer.from([0x89, 0x50, 0x4e, 0x47])), 'the PNGs are in the table');
  assert.ok(parquet.includes(Buffer.from('000030')) && parquet.includes(Buffer.from('000031')));
}));

test("outputFormat 'files' is img2dataset's default layout: a folder a shard, three files a sample", () => withSetup(async (server, dir) => {
  const rows = [{ url: server.url('/files/test.webp'), caption: 'a webp' }, { url: server.url('/files/missing.jpg'), caption: 'gone' }];
  const out = join(dir, 'files');
  const result = await downloadDataset(rows, out, { captionCol: 'caption', outputFormat: 'files', shardSize: 1, binary, width: 24, height: 24, format: 'png' });
  assert.deepEqual([result.count, result.successes, result.exitStatus], [2, 1, 1]);
  assert.deepEqual(result.shards, [join(out, '00000'), join(out, '00001')]);
  assert.deepEqual(readdirSync(join(out, '00000')).sort(), ['000000.json', '000000.png', '000000.txt']);
  assert.deepEqual(readdirSync(join(out, '00001')), [], 'a failed row has no files, only its Parquet row and its count');
  assert.equal(readFileSync(join(out, '00000', '000000.txt'), 'utf8'), 'a webp');
  assert.deepEqual(JSON.parse(readFileSync(join(out, '00000', '000000.json'), 'utf8')).width, 24);
}));

test('options get does not have, and bad formats, are refused before anything runs', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'iw-node-dataset-'));
  try {
    await assert.rejects(downloadDataset([], join(dir, 'a'), { binary, noSuchOption: 1 }), /unknown option noSuchOption/);
    await assert.rejects(downloadDataset([], join(dir, 'a'), { binary, outputFormat: 'tfrecord' }), /outputFormat must be one of/);
  await assert.rejects(downloadDataset(['http://127.0.0.1:9/a.jpg'], join(dir, 'a'), { binary }), /rows are objects of column to value/);
    await assert.rejects(downloadDataset('rows.xlsx', join(dir, 'a'), { binary, inputFormat: 'xlsx' }), /inputFormat must be one of/);
    const aborted = AbortSignal.abort(new Error('stopped before it began'));
    await assert.rejects(downloadDataset([{ url: 'http://127.0.0.1:9/a.jpg' }], join(dir, 'b'), { binary, signal: aborted }), /stopped before it began/);
    assert.ok(!existsSync(join(dir, 'b')), 'nothing was run');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an AbortSignal stops the run as a Ctrl-C would: complete shards kept, the rest dropped', () => withSetup(async (server, dir) => {
  const rows = Array.from({ length: 24 }, (_, i) => ({ url: server.url(`/files/testorig.jpg?i=${i}&chunk=2048&delayMs=${i >= 8 ? 40 : 0}`) }));
  const out = join(dir, 'shards');
  const controller = new AbortController();
  const watch = setInterval(() => { if (existsSync(join(out, '00001_stats.json'))) controller.abort(new Error('enough')); }, 10);
  try {
    await assert.rejects(downloadDataset(rows, out, { shardSize: 4, binary, concurrency: 2, signal: controller.signal }), /enough/);
  } finally {
    clearInterval(watch);
  }
  const left = readdirSync(out).sort();
  assert.ok(left.every((n) => /^\d{5}(\.tar|\.parquet|_stats\.json)$/.test(n)), left.join(' '));
  assert.ok(!left.includes('00005_stats.json'), 'stopped before the end');
  const result = await downloadDataset(rows, out, { shardSize: 4, binary, resume: true });
  assert.deepEqual([result.count, result.successes, result.shards.length], [24, 24, 6]);
}));
