// One download's handle: events as an async iterator and an EventEmitter, `done`, cancel and priority.
import { EventEmitter } from 'node:events';

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
