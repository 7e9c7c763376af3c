import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { downloadMany, spawnWorker } from '../index.js';
import { binaryPath, startServer } from './loopback.js';

const binary = binaryPath();
const roots = [...new Set(['/dev/shm', tmpdir()])].filter((root) => existsSync(root));
const folders = (pid) => roots.flatMap((root) => readdirSync(root).filter((name) => name.startsWith(`image-worker-${pid}-`)));

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
      assert.equal(outcome.image.path, undefined, 'the file was taken: read, then unlinked');
      count += 1;
    }
    assert.equal(count, 5);
    const pid = worker.pid;
    for (const name of folders(pid)) {
      const root = roots.find((r) => existsSync(join(r, name)));
      assert.deepEqual(readdirSync(join(root, name)).filter((f) => f !== '.lock'), []);
    }
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
