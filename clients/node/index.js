// image-worker client for Node (ESM, no dependencies). See README.md and index.d.ts.
// By concern: lib/process.js (the process and its line framing), lib/worker.js (requests and
// routing), lib/handle.js (one download), lib/events.js, lib/requests.js, lib/errors.js,
// lib/binary.js.
export * from './lib/errors.js';
export * from './lib/events.js';
export * from './lib/binary.js';
export * from './lib/requests.js';
export { DownloadHandle } from './lib/handle.js';
export { Worker, spawnWorker } from './lib/worker.js';
export { fillIndex, manifestRecord, readManifest } from './lib/manifest.js';
export { downloadMany } from './lib/download-many.js';
export { downloadDataset } from './lib/dataset.js';
