#!/usr/bin/env node
// The Node client's folder path, as a user writes it, for scripts/pipeline_bench.py to time:
//   node scripts/user_paths.mjs node-dir --list URLS.txt --out DIR [--binary PATH]
// `for await (const o of downloadMany(urls, { dir }))`; prints one JSON line (job, files, ok, wall_s).
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { downloadMany } from '../clients/node/index.js';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const args = process.argv.slice(2);
const job = args[0];
const option = (name, fallback) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : fallback;
};
if (job !== 'node-dir') {
  console.error('usage: user_paths.mjs node-dir --list URLS.txt --out DIR [--binary PATH]');
  process.exit(2);
}
const urls = readFileSync(option('--list'), 'utf8').split('\n').filter((line) => line.trim());
const binary = option('--binary', join(root, '.build', 'release', 'image-worker'));
const start = performance.now();
let ok = 0;
for await (const outcome of downloadMany(urls, { dir: option('--out'), binary })) {
  if (outcome.ok) ok += 1;
}
const wall = (performance.now() - start) / 1000;
console.log(JSON.stringify({ job, files: urls.length, ok, failed: urls.length - ok, wall_s: wall }));
