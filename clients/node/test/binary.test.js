import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import { BinaryNotFound, findBinary, spawnWorker } from '../index.js';
import { REPO, binaryPath } from './loopback.js';

const binary = binaryPath();

function withEnv(changes, body) {
  const saved = { PATH: process.env.PATH, IMAGE_WORKER_BIN: process.env.IMAGE_WORKER_BIN };
  for (const [k, v] of Object.entries(changes)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  return Promise.resolve().then(body).finally(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
}

test('argument, then $IMAGE_WORKER_BIN, then PATH', () => withEnv({ IMAGE_WORKER_BIN: binary }, async () => {
  assert.deepEqual(findBinary(binary), { path: resolve(binary), source: 'argument' });
  assert.deepEqual(findBinary(), { path: resolve(binary), source: '$IMAGE_WORKER_BIN' });
  const dir = mkdtempSync(join(tmpdir(), 'iw-path-'));
  copyFileSync(binary, join(dir, 'image-worker'));
  await withEnv({ IMAGE_WORKER_BIN: undefined, PATH: dir }, async () => {
    assert.deepEqual(findBinary(), { path: join(dir, 'image-worker'), source: 'PATH' });
    const worker = await spawnWorker();
    assert.equal(worker.binarySource, 'PATH');
    await worker.close();
  });
}));

test('the repository\'s release build, or a message naming every place looked', () =>
  withEnv({ IMAGE_WORKER_BIN: undefined, PATH: '/nonexistent' }, () => {
    const release = join(REPO, '.build', 'release', 'image-worker');
    if (existsSync(release)) assert.deepEqual(findBinary(), { path: release, source: '.build/release' });
    else assert.throws(() => findBinary(), (e) => e instanceof BinaryNotFound && e.message.includes(release) && e.message.includes('PATH'));
    assert.throws(() => findBinary('/nope/image-worker'), /not an executable file/);
  }));

test('a bad $IMAGE_WORKER_BIN says so', () => withEnv({ IMAGE_WORKER_BIN: '/nope' }, () => {
  assert.throws(() => findBinary(), /\$IMAGE_WORKER_BIN is set/);
}));
