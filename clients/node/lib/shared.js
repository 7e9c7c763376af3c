// Shared-memory results (`delivery: 'shared'`): the worker writes a large result to a file of its
// own in its private folder (/dev/shm/image-worker-PID-XXXXXX); the client takes it as the event
// arrives: reads it into a Buffer (Node cannot map a file without a native addon: one copy, from
// memory), then gives it back: moves it into the folder's `free/`, where the worker writes a later
// result into its memory (fresh pages for every image cost more than the copy), or unlinks it when
// `free/` holds enough already (16 files; 64 MiB, or an eighth of the file system if less) or the
// file is large.
import { constants, closeSync, fstatSync, lstatSync, openSync, readSync, readdirSync, renameSync, rmdirSync, statfsSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';

export const PREFIX = 'image-worker-';
// What the worker keeps in `free/` at most (SharedOutput.maxFreeFiles, maxFreeFileBytes, maxFreeBytes;
// in bytes, an eighth of the file system if that is less: `freeByteCap`).
export const MAX_FREE_FILES = 16;
export const MAX_FREE_FILE_BYTES = 16 << 20;
export const MAX_FREE_BYTES = 64 << 20;

/** What `folder` (a worker's `free/`) may hold: MAX_FREE_BYTES, or an eighth of its file system when
 * that is less (a container's 64 MB /dev/shm keeps 8 MiB idle, not all of it). */
export function freeByteCap(folder) {
  try {
    const info = statfsSync(folder);
    return Math.min(MAX_FREE_BYTES, Math.floor((info.blocks * info.bsize) / 8));
  } catch {
    return MAX_FREE_BYTES;
  }
}

/** The file's bytes, the file given back (or unlinked); throws when it cannot be read. */
export function takeShared(path) {
  const fd = openSync(path, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
  let size = 0;
  try {
    size = fstatSync(fd).size;
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
    giveBack(path, size);
  }
}

/** A read file into its folder's `free/` when that has room (files and bytes) and the file is not large; else unlinked. */
function giveBack(path, size) {
  if (size > 0 && size <= MAX_FREE_FILE_BYTES) {
    const free = join(dirname(path), 'free');
    try {
      const names = readdirSync(free);
      if (names.length < MAX_FREE_FILES) {
        // What this process gave back and the worker has not taken counts by the size it knew (no
        // lstat of each); anything else there by its size.
        let known = given.get(free);
        if (!known) given.set(free, (known = { cap: freeByteCap(free), sizes: new Map() }));
        const kept = new Map();
        let bytes = size;
        for (const name of names) {
          const bytesOf = known.sizes.get(name) ?? sizeOf(join(free, name));
          kept.set(name, bytesOf);
          bytes += bytesOf;
        }
        if (bytes <= known.cap) {
          const name = basename(path);
          renameSync(path, join(free, name));
          kept.set(name, size);
          known.sizes = kept;
          return;
        }
      }
    } catch {
      // a worker without it, or gone
      given.delete(free);
    }
  }
  try {
    unlinkSync(path);
  } catch {
    // taken already
  }
}

// Per `free/` folder: what it may hold (`freeByteCap`, read once), and the files in it as last seen
// with their sizes (a file's name is never used twice in a worker's folder, and its size does not
// change while it is there).
const given = new Map();

/** The size of the file at `path`; 0 when it is gone (the worker took it meanwhile). */
function sizeOf(path) {
  try {
    return lstatSync(path).size;
  } catch {
    return 0;
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
  for (const free of [...given.keys()]) if (basename(dirname(free)).startsWith(start)) given.delete(free);
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
        for (const sub of ['held', 'free']) {
          const subfolder = join(folder, sub);
          let isFolder = false;
          try {
            isFolder = lstatSync(subfolder).isDirectory();
          } catch {
            // none
          }
          if (isFolder) {
            removeFiles(subfolder);
            rmdirSync(subfolder);
          }
        }
        removeFiles(folder);
        rmdirSync(folder);
      } catch {
        // another process's, or gone
      }
    }
  }
}

/** Unlinks what is in `folder` that is not a directory (links themselves, not their targets). */
function removeFiles(folder) {
  for (const entry of readdirSync(folder)) {
    const target = join(folder, entry);
    if (!lstatSync(target).isDirectory()) unlinkSync(target);
  }
}
