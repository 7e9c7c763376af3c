import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Cancelled, InvalidDownloadStatusCode, UnsupportedFormat, downloadMany, fillIndex, readManifest as readRecords, spawnWorker } from '../index.js';
import { binaryPath, withSetup as withSetupIn } from './loopback.js';
import { Schemas } from './schema.js';

const schemas = new Schemas();

/** The manifest's records, each checked against protocol/schema/manifest-record.schema.json. */
function readManifest(path) {
  const records = readRecords(path);
  for (const record of records) assert.deepEqual(schemas.problems(record, 'manifest-record.schema.json'), [], JSON.stringify(record));
  return records;
}

const binary = binaryPath();

const withSetup = (body) => withSetupIn(body, 'iw-node-bulk-');

async function collect(iterator) {
  const all = [];
  for await (const outcome of iterator) all.push(outcome);
  return all;
}

test('index placeholders', () => {
  assert.equal(fillIndex('p{index:3}.{ext}', 7), 'p007.{ext}');
  assert.equal(fillIndex('{{index}}{index}', 1), '{{index}}1');
});

test('downloadMany: names, a manifest, and a resumed run that fetches nothing', () => withSetup(async (server, dir) => {
  const out = join(dir, 'images');
  const manifest = join(dir, 'job.jsonl');
  const urls = [server.url('/files/testorig.jpg'), server.url('/text'), server.url('/status/404'),
    { url: server.url('/files/basn2c08.png'), name: 'named/chosen.png' }, server.url('/files/testorig.jpg')];
  const options = { binary, dir: out, nameTemplate: 'p{index:3}.{ext}', manifest, maxRetries: 0, concurrency: 2 };
  const outcomes = (await collect(downloadMany(urls, options))).sort((a, b) => a.index - b.index);
  assert.deepEqual(outcomes.map((o) => o.ok), [true, false, false, true, true]);
  assert.ok(outcomes[1].error instanceof UnsupportedFormat, 'originals are verified');
  assert.ok(outcomes[2].error instanceof InvalidDownloadStatusCode);
  assert.equal(outcomes[0].image.path, join(out, 'p000.jpg'));
  assert.equal(outcomes[3].image.path, join(out, 'named', 'chosen.png'));
  assert.equal(outcomes[4].image.path, join(out, 'p004.jpg'));
  const records = Object.fromEntries(readManifest(manifest).map((r) => [r.index, r]));
  assert.deepEqual(Object.keys(records).map(Number).sort(), [0, 1, 2, 3, 4]);
  const bytes = readFileSync(join(out, 'p000.jpg'));
  assert.equal(records[0].sha256, createHash('sha256').update(bytes).digest('hex'));
  assert.deepEqual([records[0].width, records[0].height, records[0].format, records[0].bytes], [227, 149, 'jpeg', bytes.length]);
  assert.equal(records[1].error.name, 'UnsupportedFormat');
  assert.equal(records[3].name, 'named/chosen.png');

  const worker = await spawnWorker({ binary });
  try {
    const hits = server.hits('/files/testorig.jpg');
    const { binary: _, ...rest } = options;
    const again = (await collect(worker.downloadMany(urls, { ...rest, resume: true }))).sort((a, b) => a.index - b.index);
    assert.deepEqual(again.map((o) => o.ok), [true, false, false, true, true]);
    assert.ok(again.filter((o) => o.ok).every((o) => o.skipped));
    assert.equal(server.hits('/files/testorig.jpg'), hits, 'nothing fetched again');
    assert.deepEqual(readManifest(manifest).map((r) => r.index).sort(), [0, 1, 2, 3, 4]);
  } finally {
    await worker.close();
  }
}));

test('downloadMany streams in completion order with a concurrency bound', () => withSetup(async (server, dir) => {
  async function* urls() {
    yield server.url('/files/testimgp.jpg?chunk=500&delayMs=20');
    for (let i = 0; i < 12; i++) yield server.url(`/files/testorig.jpg?n=${i}`);
  }
  const worker = await spawnWorker({ binary });
  try {
    let running = 0;
    let most = 0;
    const seen = [];
    for await (const outcome of worker.downloadMany(urls(), { dir, concurrency: 3, nameTemplate: '{index}.{ext}' })) {
      seen.push(outcome.index);
      const status = await worker.status();
      running = status.running;
      most = Math.max(most, running);
    }
    assert.equal(seen.length, 13);
    assert.deepEqual([...seen].sort((a, b) => a - b), [...Array(13).keys()]);
    assert.notEqual(seen[0], 0, 'the slow one does not hold the others back');
    assert.ok(most <= 3, `at most 3 running, saw ${most}`);
  } finally {
    await worker.close();
  }
}));

test('an endless input is read only a window ahead', () => withSetup(async (server, dir) => {
  let pulled = 0;
  function* urls() {
    for (let n = 1; ; n++) {
      pulled++;
      yield server.url(`/files/basn2c08.png?${n}`);
    }
  }
  let got = 0;
  for await (const outcome of downloadMany(urls(), { dir, concurrency: 2, maxRetries: 0, binary })) {
    assert.ok(outcome.ok);
    if (++got === 50) break;
  }
  // The window at concurrency 2 is 34: what was pulled is what ended plus at most that.
  assert.ok(pulled > 50 && pulled <= 50 + 34 + 1, `pulled ${pulled}`);
}));

test('an AbortSignal cancels the rest; the manifest keeps what ended', () => withSetup(async (server, dir) => {
  const manifest = join(dir, 'm.jsonl');
  const controller = new AbortController();
  const worker = await spawnWorker({ binary });
  try {
    const seen = [];
    await assert.rejects(async () => {
      for await (const outcome of worker.downloadMany(
        [server.url('/files/testorig.jpg'), server.url('/hang'), server.url('/hang?2')],
        { dir, manifest, timeoutMs: 60000, signal: controller.signal },
      )) {
        seen.push(outcome);
        controller.abort();
      }
    }, (error) => error.name === 'AbortError');
    assert.deepEqual(seen.map((o) => [o.index, o.ok]), [[0, true]]);
    const records = Object.fromEntries(readManifest(manifest).map((r) => [r.index, r.outcome]));
    assert.deepEqual(records, { 0: 'ok', 1: 'cancelled', 2: 'cancelled' });
    const status = await worker.status();
    assert.equal(status.running + status.queued, 0);
  } finally {
    await worker.close();
  }
}));

test('leaving the loop early cancels the rest too', () => withSetup(async (server, dir) => {
  const worker = await spawnWorker({ binary });
  try {
    for await (const outcome of worker.downloadMany([server.url('/hang'), server.url('/files/testorig.jpg')], { dir, timeoutMs: 60000 })) {
      assert.equal(outcome.index, 1);
      break;
    }
    const status = await worker.status();
    assert.equal(status.running + status.queued, 0);
    assert.equal(status.cancelled, 1);
    assert.ok(!existsSync(join(dir, 'hang.bin')));
    assert.equal(Cancelled.errorName, 'Cancelled');
  } finally {
    await worker.close();
  }
}));

test('a manifest never records a URL\'s password, and still recognises the URL', async () => {
  const { manifestRecord, manifestKey, redactedURL } = await import('../lib/manifest.js');
  const url = 'http://user:hunter2@127.0.0.1:9/a.jpg?x=1';
  assert.equal(redactedURL(url), 'http://127.0.0.1:9/a.jpg?x=1');
  assert.equal(redactedURL('http://127.0.0.1/a@b.jpg'), 'http://127.0.0.1/a@b.jpg', 'an @ in the path stays');
  const record = manifestRecord({ index: 0, url, name: undefined, image: null, error: null, format: 'original' });
  assert.ok(!JSON.stringify(record).includes('hunter2'));
  assert.equal(manifestKey(record.url, undefined), manifestKey(url, undefined));
});

test('a link planted beside the manifest is not followed', () => withSetup(async (server, dir) => {
  // The temporary file was `M.tmp-PID`, a name anyone could guess, opened without O_EXCL or
  // O_NOFOLLOW: a link planted there had its target truncated and M became a link to it.
  const victim = join(dir, 'victim');
  writeFileSync(victim, 'precious\n');
  const manifest = join(dir, 'm.jsonl');
  symlinkSync(victim, `${manifest}.tmp-${process.pid}`);
  const options = { binary, dir: join(dir, 'out'), manifest };
  const first = await collect(downloadMany([server.url('/files/testorig.jpg')], options));
  assert.ok(first.every((o) => o.ok));
  await collect(downloadMany([server.url('/files/testorig.jpg')], { ...options, resume: true }));
  assert.equal(readFileSync(victim, 'utf8'), 'precious\n');
  assert.ok(lstatSync(manifest).isFile());
  assert.equal(readRecords(manifest).length, 1);
}));

test('the GUIDE\'s Ctrl-C recipe, run as written: Ctrl-C to the process group records no failure', () => withSetup(async (server, dir) => {
  const { spawn } = await import('node:child_process');
  const guide = readFileSync(new URL('../../../GUIDE.md', import.meta.url), 'utf8');
  const recipe = [...guide.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]).find((code) => code.includes('AbortController'));
  assert.ok(recipe, 'GUIDE.md has the recipe');
  const urls = Array.from({ length: 60 }, (_, i) => server.url(`/files/testorig.jpg?n=${i}&chunk=1000&delayMs=60`));
  const script = `const urls = ${JSON.stringify(urls)};\n` +
    recipe.replace("from 'image-worker'", `from ${JSON.stringify(new URL('../index.js', import.meta.url).href)}`);
  // Detached: a process group of its own, as a terminal's foreground job is.
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    cwd: dir, detached: true, env: { ...process.env, IMAGE_WORKER_BIN: binary }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => { err += d; });
  await new Promise((resolve) => child.stdout.on('data', (d) => {
    out += d;
    if (out.split('\n').length > 3) resolve();
  }));
  process.kill(-child.pid, 'SIGINT'); // as a terminal's Ctrl-C: node and whatever shares its group
  const code = await new Promise((resolve) => child.on('close', resolve));
  assert.equal(code, 130, err);
  assert.match(err, /^interrupted: run it again/m);
  assert.doesNotMatch(err, /AbortError|\n\s+at /, 'no stack trace');
  const records = readManifest(join(dir, 'job.jsonl'));
  const outcomes = new Set(records.map((r) => r.outcome));
  assert.ok(outcomes.has('ok') && [...outcomes].every((o) => o === 'ok' || o === 'cancelled'), JSON.stringify(records.filter((r) => r.outcome !== 'ok' && r.outcome !== 'cancelled')));
}));
