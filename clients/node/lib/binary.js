// Finding the image-worker executable.
import { accessSync, closeSync, constants, existsSync, openSync, readSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BinaryNotFound } from './errors.js';

const ENV_VAR = 'IMAGE_WORKER_BIN';
// The platform packages that carry the worker, each installed beside this package (both tarballs
// in one `npm install`). None is a dependency of this package: npm would ask its registry for the
// name, where it is not published (whoever published it first would run code on install).
const PLATFORM_PACKAGES = { 'linux-x64': '@image-worker/linux-x64-gnu' };
// What tells the clients' own `image-worker` commands from the worker on PATH: a line in
// bin/image-worker.js, this package's command, and the import in the script pip writes for the
// Python package's. Each runs a worker it finds itself, so the lookup on PATH must take neither
// for the worker (two of them would start each other forever).
const ENTRY_POINT_MARKS = ['image-worker-client-entry-point', 'image_worker.__main__'];
/**
 * Set by a client's entry point for the worker it starts: an entry point started with it set
 * refuses to go on, so that no entry point ever starts another.
 */
export const ENTRY_POINT_ENV_VAR = 'IMAGE_WORKER_ENTRY_POINT';

function isExecutable(path) {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** This platform's package name, or undefined where none is built. */
function platformPackage() {
  return PLATFORM_PACKAGES[`${process.platform}-${process.arch}`];
}

function isEntryPointScript(path) {
  let fd;
  try {
    fd = openSync(path, 'r');
    const head = Buffer.alloc(1024);
    const n = readSync(fd, head, 0, head.length, 0);
    const text = head.subarray(0, n).toString('latin1');
    return text.startsWith('#!') && ENTRY_POINT_MARKS.some((mark) => text.includes(mark));
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * The worker carried by this platform's package (`@image-worker/linux-x64-gnu` on Linux x64),
 * or null: not installed (a source checkout, or the client's tarball alone), or no package for this platform.
 */
export function bundledBinary() {
  const name = platformPackage();
  if (!name) return null;
  try {
    const manifest = createRequire(import.meta.url).resolve(`${name}/package.json`);
    const candidate = join(dirname(manifest), 'bin', 'image-worker');
    return isExecutable(candidate) ? candidate : null;
  } catch {
    return null;
  }
}

/**
 * Finds the worker: the argument, `$IMAGE_WORKER_BIN`, `PATH`, the platform package
 * (`@image-worker/linux-x64-gnu`), then `.build/release` of the repository this package sits in:
 * what the caller names overrides what the package carries. A client's own `image-worker` command on
 * PATH (this package's or the Python package's) is passed over: the worker the platform package
 * carries wins over another client's entry point. Returns `{ path, source }`; throws
 * BinaryNotFound naming every place looked.
 */
export function findBinary(explicit) {
  if (explicit != null) {
    if (isExecutable(explicit)) return { path: resolve(explicit), source: 'argument' };
    throw new BinaryNotFound(`image-worker binary given as an argument is not an executable file: ${explicit}`);
  }
  const fromEnv = process.env[ENV_VAR];
  if (fromEnv) {
    if (isExecutable(fromEnv)) return { path: resolve(fromEnv), source: `$${ENV_VAR}` };
    throw new BinaryNotFound(`$${ENV_VAR} is set to ${JSON.stringify(fromEnv)}, which is not an executable file`);
  }
  const looked = [`$${ENV_VAR} (not set)`];
  for (const dir of (process.env.PATH || '').split(delimiter)) {
    const candidate = dir ? join(dir, 'image-worker') : null;
    // Absolute: a relative PATH entry ('.' or 'bin') names another file from another folder.
    if (candidate && isExecutable(candidate) && !isEntryPointScript(candidate)) return { path: resolve(candidate), source: 'PATH' };
  }
  looked.push("'image-worker' on PATH");
  const bundled = bundledBinary();
  if (bundled) return { path: bundled, source: 'bundled' };
  const name = platformPackage();
  looked.push(name
    ? `${name} (not installed)`
    : `a platform package (none is built for ${process.platform}-${process.arch})`);
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'Package.swift'))) {
      const candidate = join(dir, '.build', 'release', 'image-worker');
      if (isExecutable(candidate)) return { path: candidate, source: '.build/release' };
      looked.push(candidate);
    }
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw new BinaryNotFound(`cannot find the image-worker executable; looked at: ${looked.join('; ')}. `
    + `Install ${name ?? 'the platform package'}'s tarball beside this one (npm install both), or build it with \`swift build -c release\` and put it on PATH, `
    + 'set $IMAGE_WORKER_BIN, or pass { binary }.');
}
