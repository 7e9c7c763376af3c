// The module-level downloadMany: spawns a worker for the job and closes it at the end.
import { runBulk } from './bulk.js';
import { spawnWorker } from './worker.js';

/** `worker.downloadMany(urls, options)` on a worker of its own (`binary`, `args`, `env` as spawnWorker), closed at the end. */
export async function* downloadMany(urls, options = {}) {
  const { binary, args, env, ...rest } = options;
  const worker = await spawnWorker({ binary, args, env });
  try {
    yield* runBulk(worker, urls, rest);
  } finally {
    await worker.close({ cancelPending: true });
  }
}
