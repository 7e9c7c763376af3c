import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

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

// A copy of the client beside a node_modules that holds a platform package, as npm lays them out.
function installedLayout() {
  const dir = mkdtempSync(join(tmpdir(), 'iw-installed-'));
  const client = join(dir, 'node_modules', 'image-worker');
  cpSync(join(REPO, 'clients', 'node', 'lib'), join(client, 'lib'), { recursive: true });
  cpSync(join(REPO, 'clients', 'node', 'bin'), join(client, 'bin'), { recursive: true });
  copyFileSync(join(REPO, 'clients', 'node', 'package.json'), join(client, 'package.json'));
  const platform = join(dir, 'node_modules', '@image-worker', 'linux-x64-gnu');
  mkdirSync(join(platform, 'bin'), { recursive: true });
  writeFileSync(join(platform, 'package.json'), JSON.stringify({ name: '@image-worker/linux-x64-gnu', version: '0.1.0' }));
  copyFileSync(binary, join(platform, 'bin', 'image-worker'));
  chmodSync(join(platform, 'bin', 'image-worker'), 0o755);
  return { dir, client, platform };
}

test('the platform package\'s worker, after what the caller names', { skip: process.platform !== 'linux' || process.arch !== 'x64' }, async () => {
  const { dir, client, platform } = installedLayout();
  try {
    const installed = await import(pathToFileURL(join(client, 'lib', 'binary.js')).href);
    const carried = join(platform, 'bin', 'image-worker');
    await withEnv({ IMAGE_WORKER_BIN: undefined, PATH: '/nonexistent' }, () => {
      assert.equal(installed.bundledBinary(), carried);
      assert.deepEqual(installed.findBinary(), { path: carried, source: 'bundled' });
    });
    await withEnv({ IMAGE_WORKER_BIN: binary }, () => {
      assert.deepEqual(installed.findBinary(), { path: resolve(binary), source: '$IMAGE_WORKER_BIN' });
    });
    const onPath = mkdtempSync(join(tmpdir(), 'iw-path-'));
    copyFileSync(binary, join(onPath, 'image-worker'));
    await withEnv({ IMAGE_WORKER_BIN: undefined, PATH: onPath }, () => {
      assert.deepEqual(installed.findBinary(), { path: join(onPath, 'image-worker'), source: 'PATH' });
    });
    rmSync(onPath, { recursive: true });
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test('npx image-worker: the command runs the worker it finds, not itself', { skip: process.platform !== 'linux' || process.arch !== 'x64' }, async () => {
  const { dir, client } = installedLayout();
  try {
    // npm links the command into node_modules/.bin, which npx puts first on PATH.
    const bin = join(dir, 'node_modules', '.bin');
    mkdirSync(bin);
    symlinkSync(join(client, 'bin', 'image-worker.js'), join(bin, 'image-worker'));
    const env = { ...process.env, PATH: `${bin}:${process.env.PATH}` };
    delete env.IMAGE_WORKER_BIN;
    const version = execFileSync(join(bin, 'image-worker'), ['--version'], { env }).toString().trim();
    assert.match(version, /^\d+\.\d+\.\d+$/);
    // The worker's exit status and its stderr pass through.
    const failed = spawnSync(join(bin, 'image-worker'), ['get'], { env });
    assert.notEqual(failed.status, 0);
    assert.match(failed.stderr.toString(), /give at least one URL/);
    // With no worker anywhere, a clear message and 127, never a loop of the command starting itself.
    rmSync(join(dir, 'node_modules', '@image-worker'), { recursive: true });
    const lost = spawnSync(join(bin, 'image-worker'), ['--version'], { env: { ...env, PATH: `${bin}:/usr/bin:/bin` }, timeout: 20_000 });
    assert.equal(lost.status, 127, lost.stderr.toString());
    assert.match(lost.stderr.toString(), /cannot find the image-worker executable/);
  } finally {
    rmSync(dir, { recursive: true });
  }
});
