#!/usr/bin/env node
// image-worker-client-entry-point: `npx image-worker ARGS` runs the worker that findBinary finds
// (the platform package's, unless $IMAGE_WORKER_BIN or PATH names another) with ARGS, its stdin,
// stdout and stderr, and exits with its status.
import { spawn } from 'node:child_process';
import { ENTRY_POINT_ENV_VAR, findBinary } from '../lib/binary.js';

if (process.env[ENTRY_POINT_ENV_VAR]) {
  // Started by another client's entry point (or this one's): going on could only start yet
  // another, never the worker.
  process.stderr.write(`image-worker: this is a client's entry point, started by another one (${process.env[ENTRY_POINT_ENV_VAR]}) `
    + 'instead of the worker; set $IMAGE_WORKER_BIN to the worker\'s executable\n');
  process.exit(127);
}
let found;
try {
  found = findBinary();
} catch (error) {
  process.stderr.write(`image-worker: ${error.message}\n`);
  process.exit(127);
}
const child = spawn(found.path, process.argv.slice(2), {
  stdio: 'inherit',
  env: { ...process.env, [ENTRY_POINT_ENV_VAR]: 'node' },
});
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => child.kill(signal));
}
child.on('error', (error) => {
  process.stderr.write(`image-worker: ${error.message}\n`);
  process.exit(127);
});
child.on('exit', (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.exit(code ?? 1);
  }
});
