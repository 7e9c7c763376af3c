import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
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

test('both clients\' commands on PATH: each passes over the other\'s, and none starts another', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'iw-shims-'));
  try {
    // The Python wheel's script (pip writes it for the console entry point) and npm's link.
    const pipBin = join(dir, 'venv-bin');
    const npmBin = join(dir, 'npm-bin');
    mkdirSync(pipBin);
    mkdirSync(npmBin);
    writeFileSync(join(pipBin, 'image-worker'),
      '#!/usr/bin/python3\nimport sys\nfrom image_worker.__main__ import main\nif __name__ == "__main__":\n    sys.exit(main())\n');
    chmodSync(join(pipBin, 'image-worker'), 0o755);
    symlinkSync(join(REPO, 'clients', 'node', 'bin', 'image-worker.js'), join(npmBin, 'image-worker'));
    const real = join(dir, 'real');
    mkdirSync(real);
    copyFileSync(binary, join(real, 'image-worker'));
    await withEnv({ IMAGE_WORKER_BIN: undefined, PATH: `${pipBin}:${npmBin}:${real}` }, () => {
      assert.deepEqual(findBinary(), { path: join(real, 'image-worker'), source: 'PATH' });
    });
    // npm's command with the wheel's first on PATH: the worker or a clear 127, never a chain
    // (a timeout here would be the chain).
    const env = { ...process.env, PATH: `${pipBin}:${npmBin}:${process.env.PATH}` };
    delete env.IMAGE_WORKER_BIN;
    delete env.IMAGE_WORKER_ENTRY_POINT;
    const run = spawnSync(join(npmBin, 'image-worker'), ['--version'], { env, timeout: 30_000 });
    assert.ok(run.status === 0 || run.status === 127, `${run.status} ${run.stderr}`);
    assert.doesNotMatch(run.stderr.toString(), /started by another one/);
    // An entry point started by another one refuses at once.
    const guarded = spawnSync(join(npmBin, 'image-worker'), ['--version'],
      { env: { ...env, IMAGE_WORKER_ENTRY_POINT: 'python', IMAGE_WORKER_BIN: binary }, timeout: 30_000 });
    assert.equal(guarded.status, 127);
    assert.match(guarded.stderr.toString(), /started by another one \(python\)/);
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test('a relative PATH entry gives an absolute path: spawnWorker({ cwd }) starts that file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'iw-relative-'));
  const saved = process.cwd();
  try {
    copyFileSync(binary, join(dir, 'image-worker'));
    mkdirSync(join(dir, 'elsewhere'));
    process.chdir(dir);
    await withEnv({ IMAGE_WORKER_BIN: undefined, PATH: '.:/nonexistent' }, async () => {
      assert.deepEqual(findBinary(), { path: join(dir, 'image-worker'), source: 'PATH' });
      const worker = await spawnWorker({ cwd: join(dir, 'elsewhere') });
      assert.ok(await worker.status());
      await worker.close();
    });
  } finally {
    process.chdir(saved);
    rmSync(dir, { recursive: true });
  }
});

test('the client names no dependency: installing its tarball asks no registry for anything', async () => {
  const manifest = JSON.parse(readFileSync(join(REPO, 'clients', 'node', 'package.json'), 'utf8'));
  for (const field of ['dependencies', 'optionalDependencies', 'peerDependencies', 'bundleDependencies', 'bundledDependencies']) {
    assert.deepEqual(Object.keys(manifest[field] ?? {}), [], field);
  }
});
