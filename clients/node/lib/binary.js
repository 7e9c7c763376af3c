// Finding the image-worker executable.
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BinaryNotFound } from './errors.js';

const ENV_VAR = 'IMAGE_WORKER_BIN';

function isExecutable(path) {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/**
 * Finds the worker: the argument, `$IMAGE_WORKER_BIN`, `PATH`, then `.build/release` of the
 * repository this package sits in. Returns `{ path, source }`; throws BinaryNotFound.
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
    if (dir && isExecutable(join(dir, 'image-worker'))) return { path: join(dir, 'image-worker'), source: 'PATH' };
  }
  looked.push("'image-worker' on PATH");
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
    + 'Build it with `swift build -c release` and put it on PATH, set $IMAGE_WORKER_BIN, or pass { binary }.');
}
