// image-worker client for Node (ESM, no dependencies). See README.md and index.d.ts.
import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PROTOCOL_VERSION = '1';
export const PRIORITIES = ['veryLow', 'low', 'normal', 'high', 'veryHigh'];
export const FORMATS = ['original', 'png', 'rgba', 'rgb', 'gray'];

// MARK: errors

export class ImageWorkerError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** No image-worker executable was found; the message lists every place looked. */
export class BinaryNotFound extends ImageWorkerError {}

/** The worker process ended while work was pending; `stderr` holds its last lines. */
export class WorkerExited extends ImageWorkerError {
  constructor(exitCode, signal, stderr, what = 'the image-worker process exited unexpectedly') {
    const status = signal ? `killed by ${signal}` : exitCode === null ? 'still running' : `exit status ${exitCode}`;
    const tail = stderr.length ? stderr.map((l) => '  ' + l).join('\n') : '  (nothing on stderr)';
    super(`${what} (${status}); its last stderr lines:\n${tail}`);
    this.exitCode = exitCode;
    this.signal = signal;
    this.stderr = [...stderr];
  }
}

/** The worker was closed by this program. */
export class WorkerClosed extends ImageWorkerError {}

/** The worker answered a request with a JSON-RPC error (e.g. -32602, invalid params). */
export class RequestError extends ImageWorkerError {
  constructor(code, message, data) {
    super(`${message} (JSON-RPC error ${code})`);
    this.code = code;
    this.rpcMessage = message;
    this.data = data;
  }
}

/** A download ended with an error; subclasses name the protocol's error codes. */
export class DownloadError extends ImageWorkerError {
  static code = 0;
  constructor(message, { token, url, code, data } = {}) {
    const name = (data && data.name) || new.target.errorName || 'DownloadError';
    super(`${name}: ${message}${url ? ` (${url})` : ''}`);
    this.errorName = name;
    this.code = code ?? new.target.code;
    this.rpcMessage = message;
    this.data = { ...(data || {}) };
    this.token = token;
    this.url = url;
  }
}

function errorClass(name, code, extra = {}) {
  const cls = { [name]: class extends DownloadError {} }[name];
  cls.code = code;
  cls.errorName = name;
  for (const [property, key] of Object.entries(extra)) {
    Object.defineProperty(cls.prototype, property, { get() { return this.data[key] ?? null; } });
  }
  return cls;
}

export const InvalidURL = errorClass('InvalidURL', 1001);
export const BadImageData = errorClass('BadImageData', 1002);
export const CacheNotModified = errorClass('CacheNotModified', 1003);
export const InvalidDownloadOperation = errorClass('InvalidDownloadOperation', 1004);
export const InvalidDownloadStatusCode = errorClass('InvalidDownloadStatusCode', 1005,
  { statusCode: 'statusCode', retryAfterSeconds: 'retryAfterSeconds' });
export const NetworkError = errorClass('NetworkError', 1006, { reason: 'reason' });
export const LimitExceeded = errorClass('LimitExceeded', 1007, { limit: 'limit', maximum: 'maximum' });
export const UnsupportedFormat = errorClass('UnsupportedFormat', 1008);
export const BlockedURL = errorClass('BlockedURL', 1009);
export const OutputFailed = errorClass('OutputFailed', 1010, { path: 'path' });
export const Cancelled = errorClass('Cancelled', -32800);

export const ERRORS_BY_CODE = Object.fromEntries(
  [InvalidURL, BadImageData, CacheNotModified, InvalidDownloadOperation, InvalidDownloadStatusCode, NetworkError,
    LimitExceeded, UnsupportedFormat, BlockedURL, OutputFailed, Cancelled].map((cls) => [cls.code, cls]));

export function downloadError(error, token, url) {
  const cls = ERRORS_BY_CODE[error?.code] ?? DownloadError;
  return new cls(String(error?.message ?? 'download failed'), { token, url, code: error?.code, data: error?.data });
}

// MARK: events

/** Wire fields of each event's params, by method (checked against protocol/schema by the tests). */
export const EVENT_FIELDS = {
  'download/started': ['token', 'url'],
  'download/response': ['token', 'status', 'expectedBytes', 'mimeType', 'url', 'httpVersion'],
  'download/progress': ['token', 'receivedBytes', 'expectedBytes'],
  'download/partialImage': ['token', 'sequence', 'width', 'height', 'filledRows', 'passes', 'sourceFormat',
    'orientation', 'mimeType', 'byteLength', 'pixelFormat', 'stride', 'path', 'uri', 'data'],
  'download/completed': ['token', 'outcome', 'error'],
};
/** Wire fields of a successful download's image. */
export const IMAGE_FIELDS = ['token', 'outcome', 'url', 'status', 'byteLength', 'mimeType', 'sourceFormat', 'width',
  'height', 'orientation', 'pixelFormat', 'stride', 'path', 'uri', 'data'];

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
      return { type, token, outcome, image, error: null, raw: params };
    }
    return { type, token, outcome, image: null, error: downloadError(params.error, token, url), raw: params };
  }
  return { type, ...withData(params), raw: params };
}

// MARK: binary discovery

const ENV_VAR = 'IMAGE_WORKER_BIN';

function isExecutable(path) {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/**
 * Finds the worker: the argument, `$IMAGE_WORKER_BIN`, `PATH`, then `.build/release` of the
 * repository this package sits in. Returns `{ path, source }`; throws BinaryNotFound.
 */
export function findBinary(explicit) {
  if (explicit != null) {
    if (isExecutable(explicit)) return { path: resolve(explicit), source: 'argument' };
    throw new BinaryNotFound(`image-worker binary given as an argument is not an executable file: ${explicit}`);
  }
  const fromEnv = process.env[ENV_VAR];
  if (fromEnv) {
    if (isExecutable(fromEnv)) return { path: resolve(fromEnv), source: `$${ENV_VAR}` };
    throw new BinaryNotFound(`$${ENV_VAR} is set to ${JSON.stringify(fromEnv)}, which is not an executable file`);
  }
  const looked = [`$${ENV_VAR} (not set)`];
  for (const dir of (process.env.PATH || '').split(delimiter)) {
    if (dir && isExecutable(join(dir, 'image-worker'))) return { path: join(dir, 'image-worker'), source: 'PATH' };
  }
  looked.push("'image-worker' on PATH");
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'Package.swift'))) {
      const candidate = join(dir, '.build', 'release', 'image-worker');
      if (isExecutable(candidate)) return { path: candidate, source: '.build/release' };
      looked.push(candidate);
    }
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw new BinaryNotFound(`cannot find the image-worker executable; looked at: ${looked.join('; ')}. `
    + 'Build it with `swift build -c release` and put it on PATH, set $IMAGE_WORKER_BIN, or pass { binary }.');
}

// MARK: requests

/** The `download` params for `url` and the client's options (see README.md). */
export function downloadParams(url, token, options = {}) {
  const {
    dir, path, inline = false, format, progressive = false, priority, headers, timeoutMs, credentials,
    allowInvalidCertificates, handleCookies, retryFailed, maxPixelSize, maxPixelCount, applyOrientation, overwrite,
    partialIntervalMs, partialMaxPixelSize,
  } = options;
  const known = new Set(['dir', 'path', 'inline', 'format', 'progressive', 'priority', 'headers', 'timeoutMs',
    'credentials', 'allowInvalidCertificates', 'handleCookies', 'retryFailed', 'maxPixelSize', 'maxPixelCount',
    'applyOrientation', 'overwrite', 'partialIntervalMs', 'partialMaxPixelSize', 'token', 'signal']);
  for (const key of Object.keys(options)) {
    if (!known.has(key)) throw new TypeError(`unknown download option ${JSON.stringify(key)}`);
  }
  if (dir != null && path != null) throw new TypeError('give dir or path, not both');
  if (inline && (dir != null || path != null)) throw new TypeError('inline delivers the bytes in the event: no dir or path with it');
  if (priority != null && !PRIORITIES.includes(priority)) throw new TypeError(`priority must be one of ${PRIORITIES.join(', ')}`);
  const chosenFormat = format ?? (progressive ? 'png' : undefined);
  if (chosenFormat != null && !FORMATS.includes(chosenFormat)) throw new TypeError(`format must be one of ${FORMATS.join(', ')}`);
  const output = {};
  if (dir != null) Object.assign(output, { delivery: 'file', dir: String(dir) });
  else if (path != null) Object.assign(output, { delivery: 'file', path: String(path) });
  else if (inline) output.delivery = 'inline';
  for (const [key, value] of Object.entries({
    format: chosenFormat, overwrite, maxPixelSize, maxPixelCount, applyOrientation, partialIntervalMs, partialMaxPixelSize,
  })) {
    if (value != null) output[key] = value;
  }
  const params = { url, token };
  for (const [key, value] of Object.entries({ priority, headers, timeoutMs, allowInvalidCertificates, handleCookies, retryFailed })) {
    if (value != null) params[key] = value;
  }
  if (credentials != null) params.credentials = { user: credentials.user, password: credentials.password };
  if (progressive) params.progressive = true;
  if (Object.keys(output).length) params.output = output;
  return params;
}

// MARK: handles

/**
 * One download: an async iterator of its events, an EventEmitter ('event', and each event's
 * type: 'started', 'response', 'progress', 'partialImage', 'completed'), `done` (a promise of
 * the image, rejected with the download's error), `cancel()` and `setPriority()`.
 */
export class DownloadHandle extends EventEmitter {
  #worker;
  #queue = [];
  #waiters = [];
  #ended = false;
  #failure = null;
  #resolve;
  #reject;

  constructor(worker, token, url) {
    super();
    this.#worker = worker;
    this.token = token;
    this.url = url;
    this.completed = null;
    this.done = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    this.done.catch(() => {}); // a caller that never awaits `done` must not crash the process
  }

  get isDone() {
    return this.#ended;
  }

  _deliver(event) {
    if (this.#ended) return;
    this.#push(event);
    this.emit('event', event);
    this.emit(event.type, event);
    if (event.type === 'completed') {
      this.completed = event;
      this.#ended = true;
      if (event.error) this.#reject(event.error);
      else this.#resolve(event.image);
      this.#wake();
    }
  }

  _fail(error) {
    if (this.#ended) return;
    this.#ended = true;
    this.#failure = error;
    this.#reject(error);
    if (this.listenerCount('error') > 0) this.emit('error', error);
    this.#wake();
  }

  #push(event) {
    const waiter = this.#waiters.shift();
    if (waiter) waiter.resolve({ value: event, done: false });
    else this.#queue.push(event);
  }

  #wake() {
    for (const waiter of this.#waiters.splice(0)) {
      if (this.#failure) waiter.reject(this.#failure);
      else waiter.resolve({ value: undefined, done: true });
    }
  }

  [Symbol.asyncIterator]() {
    return {
      next: () => {
        if (this.#queue.length) return Promise.resolve({ value: this.#queue.shift(), done: false });
        if (this.#ended) {
          if (this.#failure) {
            const failure = this.#failure;
            return Promise.reject(failure);
          }
          return Promise.resolve({ value: undefined, done: true });
        }
        return new Promise((resolve, reject) => this.#waiters.push({ resolve, reject }));
      },
      return: () => Promise.resolve({ value: undefined, done: true }),
      [Symbol.asyncIterator]() { return this; },
    };
  }

  /** Cancels the download (false when it had already ended); it still ends with a 'completed' event. */
  async cancel() {
    if (this.#ended) return false;
    return this.#worker.cancel(this.token);
  }

  /** 'veryLow', 'low', 'normal', 'high' or 'veryHigh'; false when it had ended. */
  async setPriority(priority) {
    if (this.#ended) return false;
    return this.#worker.setPriority(this.token, priority);
  }
}

// MARK: the worker

/** Spawns a worker and waits for its `initialize` answer. */
export async function spawnWorker(options = {}) {
  const worker = new Worker(options);
  await worker.ready;
  return worker;
}

/** An image-worker process. Prefer `spawnWorker()`; call `close()` when done. */
export class Worker extends EventEmitter {
  #child;
  #nextId = 0;
  #nextToken = 0;
  #replies = new Map();
  #handles = new Map();
  #stderr = [];
  #stderrLines;
  #failure = null;
  #closing = false;
  #exited;
  #pending = '';

  constructor({ binary, args = [], env, cwd, stderrLines = 40 } = {}) {
    super();
    const found = findBinary(binary);
    this.binary = found.path;
    this.binarySource = found.source;
    this.#stderrLines = stderrLines;
    this.info = null;
    this.#child = spawn(this.binary, args, { stdio: ['pipe', 'pipe', 'pipe'], env, cwd });
    this.pid = this.#child.pid;
    this.#child.stdin.on('error', () => {}); // EPIPE: the exit is reported below
    this.#child.stdout.on('data', (chunk) => this.#read(chunk));
    let stderrPending = '';
    this.#child.stderr.setEncoding('utf8');
    this.#child.stderr.on('data', (text) => {
      const lines = (stderrPending + text).split('\n');
      stderrPending = lines.pop();
      for (const line of lines) this.#keepStderr(line);
    });
    const stdoutEnded = new Promise((resolve) => this.#child.stdout.on('end', resolve));
    const stderrEnded = new Promise((resolve) => this.#child.stderr.on('end', () => {
      if (stderrPending) this.#keepStderr(stderrPending);
      resolve();
    }));
    const exited = new Promise((resolve) => this.#child.on('close', (code, signal) => resolve({ code, signal })));
    const spawnFailed = new Promise((resolve) => this.#child.on('error', (error) => resolve({ error })));
    this.#exited = Promise.race([
      Promise.all([exited, stdoutEnded, stderrEnded]).then(([status]) => status),
      spawnFailed,
    ]).then((status) => {
      if (this.#pending.trim()) this.#route(this.#pending);
      this.#pending = '';
      const error = status.error
        ? new WorkerExited(null, null, this.stderrTail, `cannot start ${this.binary}: ${status.error.message}`)
        : this.#closing
          ? new WorkerClosed('the worker was closed')
          : new WorkerExited(status.code, status.signal, this.stderrTail);
      this.#failAll(error);
      this.exitCode = status.code ?? null;
      this.emit('exit', status.code ?? null, status.signal ?? null);
      return status;
    });
    this.ready = this.#call('initialize', { client: 'image-worker (node)' }).then((info) => {
      this.info = info;
      return this;
    });
    this.ready.catch(() => {});
  }

  /** The worker's last lines of standard error. */
  get stderrTail() {
    return [...this.#stderr];
  }

  #keepStderr(line) {
    this.#stderr.push(line);
    if (this.#stderr.length > this.#stderrLines) this.#stderr.shift();
  }

  #read(chunk) {
    // Lines of any length (inline images are often far over 64 KiB).
    const text = this.#pending + chunk.toString('utf8');
    const lines = text.split('\n');
    this.#pending = lines.pop();
    for (const line of lines) if (line) this.#route(line);
  }

  #route(line) {
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      return;
    }
    for (const item of Array.isArray(message) ? message : [message]) this.#routeOne(item);
  }

  #routeOne(message) {
    if (message == null || typeof message !== 'object') return;
    if (typeof message.method === 'string') {
      const handle = this.#handles.get(message.params?.token);
      if (!handle) return;
      const event = parseEvent(message.method, message.params, handle.url);
      if (!event) return;
      if (event.type === 'completed') this.#handles.delete(event.token);
      handle._deliver(event);
      return;
    }
    const reply = this.#replies.get(message.id);
    if (!reply) return;
    this.#replies.delete(message.id);
    if (message.error) reply.reject(new RequestError(message.error.code, message.error.message, message.error.data));
    else reply.resolve(message.result);
  }

  #failAll(error) {
    if (!this.#failure) this.#failure = error;
    for (const reply of this.#replies.values()) reply.reject(error);
    this.#replies.clear();
    for (const handle of this.#handles.values()) handle._fail(error);
    this.#handles.clear();
  }

  #checkUsable() {
    if (this.#failure) throw this.#failure;
    if (this.#closing) throw new WorkerClosed('the worker is closed');
  }

  #write(message) {
    this.#child.stdin.write(JSON.stringify(message) + '\n');
  }

  #call(method, params) {
    try {
      this.#checkUsable();
    } catch (error) {
      return Promise.reject(error);
    }
    const id = ++this.#nextId;
    return new Promise((resolve, reject) => {
      this.#replies.set(id, { resolve, reject });
      this.#write(params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params });
    });
  }

  /**
   * Starts a download and returns its handle at once. A refused request (bad options) rejects
   * `handle.done` and `handle.accepted` with a RequestError.
   */
  download(url, options = {}) {
    this.#checkUsable();
    const token = options.token ?? `js-${++this.#nextToken}`;
    if (this.#handles.has(token)) throw new TypeError(`token ${JSON.stringify(token)} is already in use by a live download`);
    const params = downloadParams(url, token, options);
    const handle = new DownloadHandle(this, token, url);
    this.#handles.set(token, handle);
    handle.accepted = this.#call('download', params).then(() => undefined, (error) => {
      this.#handles.delete(token);
      handle._fail(error);
      throw error;
    });
    handle.accepted.catch(() => {});
    if (options.signal) {
      const abort = () => handle.cancel().catch(() => {});
      if (options.signal.aborted) abort();
      else options.signal.addEventListener('abort', abort, { once: true });
    }
    return handle;
  }

  async cancel(token) {
    const result = await this.#call('cancel', { token });
    return Boolean(result?.found);
  }

  async setPriority(token, priority) {
    const result = await this.#call('setPriority', { token, priority });
    return Boolean(result?.found);
  }

  async cancelAll() {
    const result = await this.#call('cancelAll');
    return result?.cancelled ?? 0;
  }

  /** Changes settings at run time (`{ maxConcurrentDownloads: 8 }`…); resolves to the configuration. */
  async configure(settings) {
    const result = await this.#call('configure', settings);
    return result?.configuration ?? {};
  }

  async status() {
    return this.#call('status');
  }

  /**
   * Ends the worker: `shutdown` (running downloads finish, or are cancelled with
   * `cancelPending`), then `exit`; kills it after `timeoutMs`. Resolves to the exit status once
   * the process is gone and every handle has ended.
   */
  async close({ cancelPending = false, timeoutMs = 30000 } = {}) {
    if (!this.#failure && !this.#closing) {
      let timer;
      try {
        await Promise.race([
          this.#call('shutdown', { cancelPending }),
          new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('timeout')), timeoutMs); }),
        ]);
        this.#closing = true;
        this.#write({ jsonrpc: '2.0', method: 'exit' });
      } catch {
        // the worker is gone or stuck: ended below
      } finally {
        clearTimeout(timer);
      }
    }
    this.#closing = true;
    this.#child.stdin.end();
    const killer = setTimeout(() => this.#child.kill('SIGKILL'), timeoutMs);
    const status = await this.#exited;
    clearTimeout(killer);
    this.#failAll(new WorkerClosed('the worker was closed'));
    return status.code ?? null;
  }

  /** Kills the process at once (pending handles fail with WorkerExited). */
  kill(signal = 'SIGKILL') {
    this.#child.kill(signal);
  }
}

/** Reads a delivered image's bytes: inline `data`, or the file at `path`. */
export async function readImageBytes(image) {
  if (image.data) return image.data;
  if (image.path) return readFile(image.path);
  throw new TypeError("nothing was delivered (output delivery 'none')");
}
