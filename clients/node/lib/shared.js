// Shared-memory results (`delivery: 'shared'`): the worker writes a large result to a file of its
// own in its private folder (/dev/shm/image-worker-PID-XXXXXX); the client takes it as the event
// arrives: reads it into a Buffer (Node cannot map a file without a native addon: one copy, from
// memory), then unlinks it.
import { constants, closeSync, fstatSync, lstatSync, openSync, readSync, readdirSync, rmdirSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const PREFIX = 'image-worker-';

/** The file's bytes, the file unlinked; throws when it cannot be read. */
export function takeShared(path) {
  const fd = openSync(path, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
  try {
    const size = fstatSync(fd).size;
    const buffer = Buffer.allocUnsafe(size);
    let offset = 0;
    while (offset < size) {
      const n = readSync(fd, buffer, offset, size - offset, offset);
      if (n === 0) throw new Error(`${path}: ended after ${offset} of ${size} bytes`);
      offset += n;
    }
    return buffer;
  } finally {
    closeSync(fd);
    try {
      unlinkSync(path);
    } catch {
      // taken already
    }
  }
}

/** Unlinks the shared file of an event nobody takes (a token with no handle any more). */
export function discardShared(params) {
  if (params?.shared === true && typeof params.path === 'string') {
    try {
      unlinkSync(params.path);
    } catch {
      // gone already
    }
  }
}

/** Removes what worker process `pid` left in its shared-memory folder once it exited (SIGKILL too). */
export function removeSharedFolders(pid) {
  if (pid == null) return;
  const start = `${PREFIX}${pid}-`;
  for (const root of new Set(['/dev/shm', tmpdir()])) {
    let names;
    try {
      names = readdirSync(root);
    } catch {
      continue;
    }
    for (const name of names) {
      if (!name.startsWith(start)) continue;
      const folder = join(root, name);
      try {
        const info = lstatSync(folder);
        if (!info.isDirectory() || (process.geteuid && info.uid !== process.geteuid())) continue;
        for (const entry of readdirSync(folder)) {
          const target = join(folder, entry);
          if (!lstatSync(target).isDirectory()) unlinkSync(target);
        }
        rmdirSync(folder);
      } catch {
        // another process's, or gone
      }
    }
  }
}
