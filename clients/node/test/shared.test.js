import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { downloadMany, spawnWorker } from '../index.js';
import { binaryPath, startServer } from './loopback.js';
import { MAX_FREE_FILES } from '../lib/shared.js';

const binary = binaryPath();
const roots = [...new Set(['/dev/shm', tmpdir()])].filter((root) => existsSync(root));
const folders = (pid) => roots.flatMap((root) => readdirSync(root).filter((name) => name.startsWith(`image-worker-${pid}-`)));
const sharedFolder = (pid) => {
  const [name] = folders(pid);
  return join(roots.find((r) => existsSync(join(r, name))), name);
};

test('decoded pixels without a dir come through shared memory as a Buffer', async () => {
  const server = await startServer();
  try {
    const worker = await spawnWorker({ binary });
    const inline = await worker.download(server.url('/files/testimgp.jpg'), { format: 'rgba', inline: true }).done;
    const urls = Array.from({ length: 5 }, (_, i) => server.url(`/files/testimgp.jpg?n=${i}`));
    let count = 0;
    for await (const outcome of worker.downloadMany(urls, { format: 'rgba' })) {
      assert.ok(outcome.ok, String(outcome.error));
      assert.equal(outcome.image.data.length, 227 * 149 * 4);
      assert.ok(outcome.image.data.equals(inline.data), 'the same pixels as inline base64');
      assert.equal(outcome.image.path, undefined, 'the file was taken: read, then given back');
      count += 1;
    }
    assert.equal(count, 5);
    const pid = worker.pid;
    // Nothing waits to be taken; the files read were given back into free/ (the worker writes
    // later images there), at most MAX_FREE_FILES of them.
    const folder = sharedFolder(pid);
    assert.deepEqual(readdirSync(folder).sort(), ['.lock', 'free', 'held']);
    assert.deepEqual(readdirSync(join(folder, 'held')), []);
    const free = readdirSync(join(folder, 'free')).length;
    assert.ok(free >= 1 && free <= MAX_FREE_FILES, `${free} files given back`);
    // The next images are written into that memory: fewer files in free/ afterwards, and the
    // pixels are right.
    const again = Array.from({ length: 3 }, (_, i) => server.url(`/files/testimgp.jpg?again=${i}`));
    for (const url of again) {
      const image = await worker.download(url, { format: 'rgba' }).done;
      assert.ok(image.data.equals(inline.data));
    }
    assert.ok(readdirSync(join(folder, 'free')).length <= free, 'no file more than before');
    await worker.close();
    assert.deepEqual(folders(pid), []);
  } finally {
    await server.close();
  }
});

test('a worker killed with SIGKILL leaves no folder behind: the client removes it', async () => {
  const server = await startServer();
  try {
    const worker = await spawnWorker({ binary });
    await worker.configure({ sharedMaxImages: 1 });
    const handles = Array.from({ length: 8 }, (_, i) =>
      worker.download(server.url(`/files/testimgp.jpg?chunk=2048&delayMs=30&k=${i}`), { format: 'rgba' }));
    await handles[0].done;
    const pid = worker.pid;
    assert.deepEqual(readdirSync(sharedFolder(pid)).filter((f) => f !== '.lock' && !f.endsWith('.rgba')).sort(), ['free', 'held']);
    process.kill(pid, 'SIGKILL');
    await Promise.allSettled(handles.map((h) => h.done));
    await worker.close();
    assert.deepEqual(folders(pid), []);
  } finally {
    await server.close();
  }
});

test('module-level downloadMany with a raw format yields pixels', async () => {
  const server = await startServer();
  try {
    for await (const outcome of downloadMany([server.url('/files/testimgp.jpg')], { binary, format: 'gray' })) {
      assert.ok(outcome.ok);
      assert.equal(outcome.image.data.length, 227 * 149);
    }
  } finally {
    await server.close();
  }
});

test('giving back counts its own files by the sizes it knew, and forgets those the worker took', async () => {
  const { mkdtempSync, mkdirSync, openSync: open, ftruncateSync, closeSync: close, renameSync, truncateSync, rmSync } = await import('node:fs');
  const { takeShared } = await import('../lib/shared.js');
  const folder = mkdtempSync(join(tmpdir(), 'image-worker-2-'));
  const MiB = 1024 * 1024;
  try {
    const free = join(folder, 'free');
    mkdirSync(free);
    const sparse = (name, size) => {
      const fd = open(join(folder, name), 'w');
      ftruncateSync(fd, size);
      close(fd);
      return join(folder, name);
    };
    takeShared(sparse('1.rgba', 14 * MiB));
    takeShared(sparse('2.rgba', 14 * MiB));
    takeShared(sparse('3.rgba', 14 * MiB));
    takeShared(sparse('4.rgba', 14 * MiB));
    assert.deepEqual(readdirSync(free).sort(), ['1.rgba', '2.rgba', '3.rgba', '4.rgba']);
    // 56 MiB there: 9 MiB more would pass 64 MiB.
    takeShared(sparse('5.rgba', 9 * MiB));
    assert.deepEqual(readdirSync(free).sort(), ['1.rgba', '2.rgba', '3.rgba', '4.rgba']);
    // The worker takes one (renames it out): then it fits.
    renameSync(join(free, '1.rgba'), join(folder, '6.rgba'));
    takeShared(sparse('7.rgba', 9 * MiB));
    assert.deepEqual(readdirSync(free).sort(), ['2.rgba', '3.rgba', '4.rgba', '7.rgba']);
    // Counted by the size known when given back, not looked at again: a file grown behind the
    // client's back (which the worker never does) still counts 14 MiB, so 6 MiB more fits.
    truncateSync(join(free, '2.rgba'), 40 * MiB);
    takeShared(sparse('8.rgba', 6 * MiB));
    assert.ok(readdirSync(free).includes('8.rgba'));
    // A file the client did not put there is looked at: 64 MiB of it leaves no room for 1 MiB more.
    for (const name of readdirSync(free)) rmSync(join(free, name));
    const fd = open(join(free, 'other'), 'w');
    ftruncateSync(fd, 64 * MiB);
    close(fd);
    takeShared(sparse('9.rgba', MiB));
    assert.deepEqual(readdirSync(free), ['other']);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
});

test('a read file is given back only while free/ stays within the worker\'s bounds', async () => {
  const { mkdtempSync, mkdirSync, openSync: open, ftruncateSync, closeSync: close, writeFileSync, rmSync } = await import('node:fs');
  const { takeShared, MAX_FREE_BYTES } = await import('../lib/shared.js');
  const folder = mkdtempSync(join(tmpdir(), 'image-worker-1-'));
  try {
    const free = join(folder, 'free');
    mkdirSync(free);
    const sparse = (path, size) => {
      const fd = open(path, 'w');
      ftruncateSync(fd, size);
      close(fd);
    };
    // Room for it: read, then moved into free/.
    writeFileSync(join(folder, 'a.rgba'), Buffer.alloc(1000, 7));
    assert.equal(takeShared(join(folder, 'a.rgba')).length, 1000);
    assert.deepEqual(readdirSync(free).sort(), ['a.rgba']);
    // Bytes: 60 MiB there (sparse: a size without memory); 4 MiB + 1 more would pass 64 MiB.
    sparse(join(free, 'big'), 60 * 1024 * 1024);
    sparse(join(folder, 'b.rgba'), MAX_FREE_BYTES - 60 * 1024 * 1024 + 1);
    takeShared(join(folder, 'b.rgba'));
    assert.deepEqual(readdirSync(free).sort(), ['a.rgba', 'big']);
    assert.ok(!existsSync(join(folder, 'b.rgba')), 'unlinked');
    sparse(join(folder, 'c.rgba'), MAX_FREE_BYTES - 60 * 1024 * 1024 - 1000);
    takeShared(join(folder, 'c.rgba'));
    assert.deepEqual(readdirSync(free).sort(), ['a.rgba', 'big', 'c.rgba']);
    // Files: MAX_FREE_FILES there already, one more is unlinked.
    for (const name of readdirSync(free)) rmSync(join(free, name));
    for (let n = 0; n < MAX_FREE_FILES; n++) writeFileSync(join(free, `x${n}`), 'x');
    writeFileSync(join(folder, 'd.rgba'), Buffer.alloc(10));
    takeShared(join(folder, 'd.rgba'));
    assert.equal(readdirSync(free).length, MAX_FREE_FILES);
    assert.ok(!existsSync(join(folder, 'd.rgba')) && !readdirSync(free).includes('d.rgba'));
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
});

test('on a small /dev/shm, the files given back hold at most an eighth of it', async (t) => {
  const { spawnSync, spawn } = await import('node:child_process');
  // A mount namespace of its own with a 4 MiB tmpfs on /dev/shm (a container's is often 64 MB).
  if (spawnSync('unshare', ['--mount', 'sh', '-c', 'mount -t tmpfs -o size=4m tmpfs /dev/shm']).status !== 0) {
    t.skip('no mount namespace here (unshare --mount needs root or user namespaces)');
    return;
  }
  const server = await startServer();
  try {
    const urls = Array.from({ length: 40 }, (_, i) => server.url(`/files/testimgp.jpg?n=${i}`));
    const child = `
      import { readdirSync, lstatSync } from 'node:fs';
      import { join } from 'node:path';
      import { downloadMany } from ${JSON.stringify(new URL('../index.js', import.meta.url).href)};
      import { freeByteCap } from ${JSON.stringify(new URL('../lib/shared.js', import.meta.url).href)};
      const [binary, ...urls] = process.argv.slice(1);
      let most = 0, ok = 0, cap;
      for await (const o of downloadMany(urls, { format: 'rgba', binary })) {
        ok += o.ok && o.image.data.length === 227 * 149 * 4 ? 1 : 0;
        const name = readdirSync('/dev/shm').find((n) => n.startsWith('image-worker-'));
        const free = join('/dev/shm', name, 'free');
        cap ??= freeByteCap(free);  // while the folder is there
        const size = (n) => { try { return lstatSync(join(free, n)).size; } catch { return 0; } };  // taken meanwhile
        most = Math.max(most, readdirSync(free).reduce((sum, n) => sum + size(n), 0));
      }
      console.log(JSON.stringify({ ok, most, cap }));
    `;
    const script = `mount -t tmpfs -o size=4m tmpfs /dev/shm && exec ${process.execPath} --input-type=module -e "$0" "$@"`;
    const run = spawn('unshare', ['--mount', 'sh', '-c', script, child, binary, ...urls]);
    let out = '';
    let err = '';
    run.stdout.on('data', (d) => { out += d; });
    run.stderr.on('data', (d) => { err += d; });
    const status = await new Promise((resolve) => run.on('close', resolve));
    assert.equal(status, 0, err);
    const result = JSON.parse(out.trim().split('\n').pop());
    assert.equal(result.ok, 40, out);
    assert.equal(result.cap, (4 << 20) / 8, out);
    assert.ok(result.most > 0 && result.most <= result.cap, out);
  } finally {
    await server.close();
  }
});
