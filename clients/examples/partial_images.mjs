#!/usr/bin/env node
// Partial images arriving while a progressive JPEG or interlaced PNG downloads:
//   node clients/examples/partial_images.mjs URL [OUT_DIR]
// Each partial image replaces the file atomically, so a viewer can reload it at any time.
import { spawnWorker } from '../node/index.js';

const [url, dir = '.'] = process.argv.slice(2);
if (!url) {
  console.error('usage: partial_images.mjs URL [OUT_DIR]');
  process.exit(2);
}
const worker = await spawnWorker();
const handle = worker.download(url, { dir, progressive: true, partialIntervalMs: 0 });
handle.on('progress', (e) => process.stderr.write(`\r${e.receivedBytes}/${e.expectedBytes ?? '?'} bytes`));
handle.on('partialImage', (e) =>
  console.log(`partial #${e.sequence}: ${e.width}x${e.height}, ${e.filledRows} rows, ${e.passes} passes -> ${e.path}`));
try {
  const image = await handle.done;
  console.log(`final: ${image.width}x${image.height} ${image.sourceFormat} -> ${image.path}`);
} catch (error) {
  console.error(`\n${error.message}`);
  process.exitCode = 1;
} finally {
  await worker.close();
}
