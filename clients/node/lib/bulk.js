// downloadMany: many URLs as an async iterator of outcomes, in order of completion, with a
// concurrency bound, an AbortSignal and an optional manifest (lib/manifest.js).
import { ManifestFile, manifestRecord } from './manifest.js';
import { bulkQueueDepth } from './option-table.js';
import { ImageWorkerError } from './errors.js';

/** `[index, url, name]` for each input: a URL, `{ url, name }` or `[url, name]`. */
function entry(value, index) {
  if (Array.isArray(value) && value.length === 2) return [index, value[0], value[1] ?? undefined];
  if (value && typeof value === 'object' && 'url' in value) return [index, value.url, value.name ?? undefined];
  return [index, value, undefined];
}

/** The options every download of the job gets: the given ones and the bulk defaults. */
export function bulkOptions(options, { manifest, resume }) {
  const each = { ...options };
  if ((each.format ?? 'original') === 'original' && !each.progressive && each.verify === undefined) each.verify = true;
  if (manifest != null && each.sha256 === undefined) each.sha256 = true;
  if (resume && each.skipExisting === undefined && !each.overwrite && (each.dir != null || each.path != null)) each.skipExisting = true;
  // The job reads nothing but each URL's end: no started, response or progress events.
  if (each.quiet === undefined && !each.progressive) each.quiet = true;
  return each;
}

function entryOptions(each, index, name) {
  const mine = { ...each };
  if (name != null) {
    delete mine.nameTemplate;
    mine.name = name;
  } else if (typeof mine.nameTemplate === 'string') {
    mine.index = index;  // the worker fills {index} and {index:N}
  }
  return mine;
}

/**
 * The job on `worker`: yields `{ index, url, name, ok, skipped, image, error }` as each URL ends.
 * Leaving the loop (`break`, an exception) or aborting `signal` cancels what is under way; the
 * manifest keeps every URL that ended, the cancelled ones too. After an abort the iterator
 * throws the signal's reason.
 */
export async function* runBulk(worker, urls, options = {}) {
  const { concurrency = 6, signal, manifest, resume = false, ...downloadOptions } = options;
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 1024) {
    throw new TypeError('concurrency must be an integer from 1 to 1024');
  }
  if (typeof urls === 'string' || urls == null || (!urls[Symbol.iterator] && !urls[Symbol.asyncIterator])) {
    throw new TypeError('urls must be an iterable of URLs');
  }
  const each = bulkOptions(downloadOptions, { manifest, resume });
  const format = each.format ?? (each.progressive ? 'png' : 'original');
  const file = manifest != null ? new ManifestFile(manifest, resume) : null;
  // Downloads sent ahead of their turn (the schema's x-client-bulk): the worker never waits for
  // the client, and a million-URL input is not read at once.
  const window = bulkQueueDepth(concurrency);
  // Refilled in bursts (once this many have ended), which `send` writes to the worker at once.
  const burst = Math.max(8, concurrency);
  const inflight = new Map();
  // Settled downloads in the order they ended, and the loop's wake-up when it waits for one (a
  // Promise.race over every download in flight per outcome cost O(window) reactions each time).
  const settled = [];
  let wake = null;
  const source = urls[Symbol.asyncIterator] ? urls[Symbol.asyncIterator]() : urls[Symbol.iterator]();
  let exhausted = false;
  let nextIndex = 0;
  const onAbort = () => { for (const { handle } of inflight.values()) handle.cancel().catch(() => {}); };
  signal?.addEventListener('abort', onAbort, { once: true });

  const finish = (outcome, started) => {
    file?.add(manifestRecord({ ...outcome, format, ms: started == null ? undefined : Math.round(performance.now() - started) }));
    return outcome;
  };
  // index.d.ts's BulkOutcome: ok with an image and no error, or not ok with an error and no image.
  const outcomeOf = (index, url, name, image, error) => {
    if (!error && !image) error = new ImageWorkerError('ended with neither an image nor an error');
    return error
      ? { index, url, name, ok: false, skipped: false, image: null, error }
      : { index, url, name, ok: true, skipped: Boolean(image.skipped), image, error: null };
  };

  try {
    if (signal?.aborted) throw signal.reason;
    await worker.configure({ maxConcurrentDownloads: concurrency });
    while (true) {
      const refill = inflight.size <= window - burst;
      while (refill && !exhausted && inflight.size < window && !signal?.aborted) {
        const next = await source.next();
        if (next.done) {
          exhausted = true;
          break;
        }
        const [index, url, name] = entry(next.value, nextIndex++);
        const previous = file?.take(url, name, index);
        if (previous) {
          const image = {
            token: index, url, finalUrl: '', status: 0, byteLength: previous.bytes ?? 0, mimeType: null, skipped: true,
            sourceFormat: previous.format, width: previous.width, height: previous.height, path: previous.path, sha256: previous.sha256,
          };
          yield outcomeOf(index, url, name, image, null);
          continue;
        }
        let handle;
        try {
          handle = worker.download(url, entryOptions(each, index, name));
        } catch (error) {
          yield finish(outcomeOf(index, url, name, null, error));
          continue;
        }
        // A quiet download sends no `started`: its time counts from the request.
        const item = { url, name, handle, started: each.quiet ? performance.now() : undefined };
        handle.once('started', () => { item.started ??= performance.now(); });
        item.settled = handle.done.then((image) => ({ index, image, error: null }), (error) => ({ index, image: null, error }));
        item.settled.then((result) => {
          settled.push(result);
          if (wake) {
            const resume = wake;
            wake = null;
            resume();
          }
        });
        inflight.set(index, item);
      }
      if (inflight.size === 0) break;
      while (settled.length === 0) await new Promise((resolve) => { wake = resolve; });
      const { index, image, error } = settled.shift();
      const item = inflight.get(index);
      inflight.delete(index);
      const outcome = finish(outcomeOf(index, item.url, item.name, image, error), item.started);
      if (!signal?.aborted) yield outcome;
      if (signal?.aborted && inflight.size === 0) break;
    }
    if (signal?.aborted) throw signal.reason;
  } finally {
    signal?.removeEventListener('abort', onAbort);
    try {
      for (const { handle } of inflight.values()) handle.cancel().catch(() => {});
      for (const [index, item] of inflight) {
        const { image, error } = await item.settled;
        finish(outcomeOf(index, item.url, item.name, image, error), item.started);
      }
      inflight.clear();
      if (typeof source.return === 'function' && !exhausted) await source.return();
    } finally {
      file?.close();
    }
  }
}
