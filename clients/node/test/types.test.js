import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { REPO } from './loopback.js';

const here = dirname(fileURLToPath(import.meta.url));
const tsc = spawnSync('tsc', ['--version'], { encoding: 'utf8' });

test('index.d.ts type-checks with tsc --strict alone (no @types/node)', { skip: tsc.error ? 'tsc is not installed (Debian: node-typescript)' : false }, () => {
  const result = spawnSync('tsc', ['-p', join(here, 'tsconfig.json')], { encoding: 'utf8' });
  assert.equal(result.status, 0, result.stdout + result.stderr);
  const withBuffer = spawnSync('tsc', ['-p', join(here, 'tsconfig-buffer.json')], { encoding: 'utf8' });
  assert.equal(withBuffer.status, 0, withBuffer.stdout + withBuffer.stderr);
});

test('configure() is typed with every setting the protocol defines', () => {
  const schema = JSON.parse(readFileSync(join(REPO, 'protocol', 'schema', 'requests', 'configure.schema.json'), 'utf8'));
  const params = schema.properties.params;
  const wire = Object.keys((params.oneOf ?? params.anyOf ?? [params]).find((p) => p.properties)?.properties ?? {})
    .filter((k) => k !== '_meta').sort();
  const dts = readFileSync(join(here, '..', 'index.d.ts'), 'utf8');
  const block = dts.match(/export interface Settings \{([\s\S]*?)\n\}/)[1];
  const declared = [...block.matchAll(/^\s+(\w+)\?:/gm)].map((m) => m[1]).sort();
  assert.ok(wire.length > 10, 'the schema lists the settings');
  assert.deepEqual(declared, wire);
});
