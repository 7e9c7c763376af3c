import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const tsc = spawnSync('tsc', ['--version'], { encoding: 'utf8' });

test('index.d.ts type-checks with tsc', { skip: tsc.error ? 'tsc is not installed (Debian: node-typescript)' : false }, () => {
  const result = spawnSync('tsc', ['--noEmit', '--strict', '--target', 'es2022', '--module', 'nodenext',
    '--moduleResolution', 'nodenext', '--lib', 'es2022', join(here, 'node-shim.d.ts'),
    join(here, 'types-check.ts')], { encoding: 'utf8' });
  assert.equal(result.status, 0, result.stdout + result.stderr);
});
