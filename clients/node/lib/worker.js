// The client's worker: JSON-RPC requests and replies over a WorkerProcess, events routed to handles.
import { EventEmitter } from 'node:events';
import { findBinary } from './binary.js';
import { WorkerClosed, WorkerExited } from './errors.js';
import { removeSharedFolders } from './shared.js';
import { DownloadHandle } from './handle.js';
import { runBulk } from './bulk.js';
import { WorkerProcess } from './process.js';
import { downloadParams } from './requests.js';
import { Router } from './router.js';

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
  #router = new Router('js-');
  #closing = false;
  #exited;

  constructor({ binary, args = [], env, cwd, stderrLines = 40 } = {}) {
    super();
    const found = findBinary(binary);
    this.binary = found.path;
    this.binarySource = found.source;
    this.info = null;
    /** The worker's warnings so far (`{ code, message, details }`), each code once. */
    this.warnings = [];
    // `--on-eof cancel` first (a later one of the caller's wins): should Node die, stdin's end
    // cancels what is left at once (this client never closes stdin to stop the worker).
    const workerArgs = ['--on-eof', 'cancel', ...args];
    this.#process = new WorkerProcess(this.binary, { args: workerArgs, env, cwd, stderrLines }, (line) => this.#route(line));
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
    this.#process.keepAlive(this.#router.busy || this.#closing);
  }

  /** The worker's last lines of standard error. */
  get stderrTail() {
    return this.#process.stderrTail;
  }

  #route(line) {
    const actions = this.#router.route(line);
    this.#updateKeepAlive();
    for (const action of actions) {
      if (typeof action === 'function') action();
      else this.#warn(action.warning);
    }
  }

  /**
   * The worker's warning (`{ code, message, details }`, once per code): a `'warning'` event on
   * this worker when it has listeners, otherwise `process.emitWarning`, so that it is seen.
   */
  #warn(warning) {
    this.warnings.push(warning);
    if (this.listenerCount('warning') > 0) this.emit('warning', warning);
    else process.emitWarning(`image-worker: ${warning.message}`, { type: 'ImageWorkerWarning', code: warning.code });
  }

  #failAll(error) {
    const actions = this.#router.failAll(error);
    this.#updateKeepAlive();
    for (const action of actions) action();
  }

  #checkUsable() {
    if (this.#router.failure) throw this.#router.failure;
    if (this.#closing) throw new WorkerClosed('the worker is closed');
  }

  #call(method, params) {
    try {
      this.#checkUsable();
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise((resolve, reject) => {
      const message = this.#router.request(method, params, { resolve, reject });
      this.#updateKeepAlive();
      this.#process.send(message);
    });
  }

  /**
   * Starts a download and returns its handle at once. A refused request (bad options) rejects
   * `handle.done` and `handle.accepted` with a RequestError.
   */
  download(url, options = {}) {
    this.#checkUsable();
    const token = options.token ?? this.#router.newToken();
    const handle = new DownloadHandle(this, token, url);
    this.#router.addHandle(token, handle); // a token in use is refused first, as before its options
    let params;
    try {
      params = downloadParams(url, token, options);
    } catch (error) {
      this.#router.dropHandle(token);
      throw error;
    }
    handle.accepted = this.#call('download', params).then(() => undefined, (error) => {
      this.#router.dropHandle(token);
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
   * Ends the worker: `shutdown` (running downloads get `graceMs`, 2 s by default, to finish;
   * what is left then is cancelled, at once with `cancelPending`), then `exit`; kills it after
   * `timeoutMs`. Resolves to the exit status once the process is gone and every handle has ended.
   */
  async close({ cancelPending = false, graceMs = 2000, timeoutMs = 30000 } = {}) {
    if (!Number.isFinite(graceMs) || graceMs < 0) throw new RangeError(`graceMs must be a number of milliseconds >= 0, not ${graceMs}`);
    if (!this.#router.failure && !this.#closing) {
      let timer;
      try {
        await Promise.race([
          // The worker's own bound: what has not finished then is cancelled, with its events.
          this.#call('shutdown', { cancelPending, timeoutMs: Math.round(Math.max(0, Math.min(graceMs, timeoutMs - 1000))) }),
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
