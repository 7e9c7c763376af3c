// The client's worker: JSON-RPC requests and replies over a WorkerProcess, events routed to handles.
import { EventEmitter } from 'node:events';
import { findBinary } from './binary.js';
import { RequestError, WorkerClosed, WorkerExited } from './errors.js';
import { parseEvent } from './events.js';
import { discardShared, removeSharedFolders } from './shared.js';
import { DownloadHandle } from './handle.js';
import { runBulk } from './bulk.js';
import { WorkerProcess } from './process.js';
import { downloadParams } from './requests.js';

/** Spawns a worker and waits for its `initialize` answer. */
export async function spawnWorker(options = {}) {
  const worker = new Worker(options);
  await worker.ready;
  return worker;
}

/**
 * An image-worker process. Prefer `spawnWorker()`; call `close()` when done (or `await using`).
 * While no request or download is under way it does not keep Node running.
 */
export class Worker extends EventEmitter {
  #process;
  #nextId = 0;
  #nextToken = 0;
  #replies = new Map();
  #handles = new Map();
  #failure = null;
  #closing = false;
  #exited;

  constructor({ binary, args = [], env, cwd, stderrLines = 40 } = {}) {
    super();
    const found = findBinary(binary);
    this.binary = found.path;
    this.binarySource = found.source;
    this.info = null;
    this.#process = new WorkerProcess(this.binary, { args, env, cwd, stderrLines }, (line) => this.#route(line));
    this.pid = this.#process.pid;
    this.#exited = this.#process.exited.then((status) => {
      removeSharedFolders(this.pid); // what a killed worker could not clean
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

  /** Keeps Node running while a reply or a download is awaited, or while closing; not otherwise. */
  #updateKeepAlive() {
    this.#process.keepAlive(this.#replies.size > 0 || this.#handles.size > 0 || this.#closing);
  }

  /** The worker's last lines of standard error. */
  get stderrTail() {
    return this.#process.stderrTail;
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
      if (!handle) {
        discardShared(message.params); // nobody will take this result's shared-memory file
        return;
      }
      const event = parseEvent(message.method, message.params, handle.url);
      if (!event) return;
      if (event.type === 'completed') {
        this.#handles.delete(event.token);
        this.#updateKeepAlive();
      }
      handle._deliver(event);
      return;
    }
    const reply = this.#replies.get(message.id);
    if (!reply) return;
    this.#replies.delete(message.id);
    this.#updateKeepAlive();
    if (message.error) reply.reject(new RequestError(message.error.code, message.error.message, message.error.data));
    else reply.resolve(message.result);
  }

  #failAll(error) {
    if (!this.#failure) this.#failure = error;
    for (const reply of this.#replies.values()) reply.reject(error);
    this.#replies.clear();
    for (const handle of this.#handles.values()) handle._fail(error);
    this.#handles.clear();
    this.#updateKeepAlive();
  }

  #checkUsable() {
    if (this.#failure) throw this.#failure;
    if (this.#closing) throw new WorkerClosed('the worker is closed');
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
      this.#updateKeepAlive();
      this.#process.send(params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params });
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
      this.#updateKeepAlive();
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

  /**
   * Downloads many URLs (strings, `{ url, name }` or `[url, name]`; any iterable, async too),
   * at most `concurrency` at once: an async iterator of `{ index, url, name, ok, skipped,
   * image, error }` in order of completion. Options: those of `download()` for every URL, plus
   * `concurrency` (6), `signal` (an AbortSignal: cancels the rest, then the iterator throws its
   * reason), `manifest` (a JSON Lines path: one record per URL as it ends) and `resume` (fetch
   * only what the manifest does not show as done). `nameTemplate` takes `{index}`, the input
   * position. Originals are verified unless `verify: false`.
   */
  downloadMany(urls, options = {}) {
    return runBulk(this, urls, options);
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
          // The worker's own bound: what has not finished then is cancelled, with its events.
          this.#call('shutdown', { cancelPending, timeoutMs: Math.max(0, timeoutMs - 1000) }),
          new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('timeout')), timeoutMs); }),
        ]);
        this.#closing = true;
        this.#updateKeepAlive();
        this.#process.send({ jsonrpc: '2.0', method: 'exit' });
      } catch {
        // the worker is gone or stuck: ended below
      } finally {
        clearTimeout(timer);
      }
    }
    this.#closing = true;
    this.#updateKeepAlive();
    this.#process.endInput();
    const killer = setTimeout(() => this.#process.kill('SIGKILL'), timeoutMs);
    const status = await this.#exited;
    clearTimeout(killer);
    this.#failAll(new WorkerClosed('the worker was closed'));
    return status.code ?? null;
  }

  /** `await using worker = await spawnWorker()` closes it at the end of the block. */
  async [Symbol.asyncDispose]() {
    await this.close();
  }

  /** Kills the process at once (pending handles fail with WorkerExited). */
  kill(signal = 'SIGKILL') {
    this.#process.kill(signal);
  }
}
