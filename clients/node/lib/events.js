// Typed events from the worker's download/* notifications.
import { readFile } from 'node:fs/promises';
import { downloadError } from './errors.js';
import { takeShared } from './shared.js';

/** Wire fields of each event's params, by method (checked against protocol/schema by the tests). */
export const EVENT_FIELDS = {
  'download/started': ['token', 'url'],
  'download/response': ['token', 'status', 'expectedBytes', 'mimeType', 'url', 'finalUrl', 'httpVersion'],
  'download/progress': ['token', 'receivedBytes', 'expectedBytes'],
  'download/partialImage': ['token', 'sequence', 'width', 'height', 'filledRows', 'passes', 'sourceFormat',
    'orientation', 'mimeType', 'byteLength', 'pixelFormat', 'stride', 'path', 'uri', 'data'],
  'download/completed': ['token', 'url', 'outcome', 'error', 'metrics'],
};
/** Wire fields of the worker's own notifications, by method (no token; lib/router.js reads them). */
export const WORKER_NOTIFICATION_FIELDS = {
  'worker/warning': ['code', 'message', 'details'],
};
/** Wire fields of a successful download's image (a fetched one, or a kept file: `skipped`). */
export const IMAGE_FIELDS = ['token', 'outcome', 'url', 'finalUrl', 'status', 'byteLength', 'mimeType', 'sourceFormat', 'width',
  'height', 'orientation', 'animated', 'frameCount', 'loopCount', 'pixelFormat', 'stride', 'path', 'uri', 'data', 'shared', 'sha256', 'skipped',
  'fromCache', 'revalidated', 'metrics', 'sourceSha256', 'sourceWidth', 'sourceHeight'];

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
