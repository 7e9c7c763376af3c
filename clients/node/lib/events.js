// Typed events from the worker's download/* notifications.
import { readFile } from 'node:fs/promises';
import { downloadError } from './errors.js';
import { takeShared } from './shared.js';

export { EVENT_FIELDS, IMAGE_FIELDS, WORKER_NOTIFICATION_FIELDS } from './event-table.js';

const EVENT_TYPES = {
  'download/started': 'started',
  'download/response': 'response',
  'download/progress': 'progress',
  'download/partialImage': 'partialImage',
  'download/completed': 'completed',
};

function withData(params) {
  const out = { ...params };
  if (typeof out.data === 'string') out.data = Buffer.from(out.data, 'base64');
  if (typeof out.iccProfile === 'string') out.iccProfile = Buffer.from(out.iccProfile, 'base64');
  return out;
}

/** The typed event for a `download/*` notification (null for an unknown method). */
export function parseEvent(method, params, url) {
  const type = EVENT_TYPES[method];
  if (!type || params == null || (typeof params.token !== 'string' && typeof params.token !== 'number')) return null;
  if (type === 'completed') {
    const { token, outcome } = params;
    if (outcome === 'success') {
      const image = withData(params);
      delete image.outcome;
      if (params.shared === true && typeof params.path === 'string') {
        // The file is the client's: read into `data`, then given back (no `path` left to read).
        try {
          image.data = takeShared(params.path);
        } catch (e) {
          const error = downloadError(
            { code: 1010, message: `the result in shared memory could not be read: ${e.message}`, data: { name: 'OutputFailed', path: params.path } },
            token, url ?? params.url);
          error.metrics = params.metrics ?? null;
          return { type, token, url: params.url ?? url, outcome: 'error', image: null, error, metrics: params.metrics ?? null, raw: params };
        }
        delete image.path;
        delete image.shared;
      }
      // Every frame asked (`frames: 'all'`) of a raw format: one Buffer per frame, views of `data`.
      if (Number.isInteger(params.frames) && params.pixelFormat && image.data && Number.isInteger(params.stride)) {
        const size = params.stride * params.height;
        image.frameData = Array.from({ length: params.frames }, (_, i) => image.data.subarray(i * size, (i + 1) * size));
      }
      image.skipped = params.skipped === true;
      image.fromCache = params.fromCache === true;
      image.revalidated = params.revalidated === true;
      return { type, token, url: params.url ?? url, outcome, image, error: null, metrics: params.metrics ?? null, raw: params };
    }
    const error = downloadError(params.error, token, url ?? params.url);
    error.metrics = params.metrics ?? null;
    return { type, token, url: params.url ?? url, outcome, image: null, error, metrics: params.metrics ?? null, raw: params };
  }
  return { type, ...withData(params), raw: params };
}

/** Reads a delivered image's bytes: inline `data`, or the file at `path`. */
export async function readImageBytes(image) {
  if (image.data) return image.data;
  if (image.path) return readFile(image.path);
  throw new TypeError("nothing was delivered (output delivery 'none')");
}
