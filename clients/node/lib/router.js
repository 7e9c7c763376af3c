// What the worker's lines mean, with no process: request ids and their replies, tokens and their
// handles. `route` and `failAll` return the actions to perform (resolve a reply, deliver an
// event), and the Worker performs them, as Python's `Router` (_core.py) does for its client.
import { RequestError } from './errors.js';
import { parseEvent } from './events.js';
import { discardShared } from './shared.js';

export class Router {
  #nextId = 0;
  #nextToken = 0;
  #replies = new Map();
  #handles = new Map();
  #tokenPrefix;
  #warned = new Set();
  /** The error every later call fails with, once the worker is gone. */
  failure = null;

  constructor(tokenPrefix = 'js-') {
    this.#tokenPrefix = tokenPrefix;
  }

  newToken() {
    return `${this.#tokenPrefix}${++this.#nextToken}`;
  }

  /** A request's message, its reply (`{ resolve, reject }`) kept until its answer. */
  request(method, params, reply) {
    const id = ++this.#nextId;
    this.#replies.set(id, reply);
    return params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params };
  }

  addHandle(token, handle) {
    if (this.#handles.has(token)) throw new TypeError(`token ${JSON.stringify(token)} is already in use by a live download`);
    this.#handles.set(token, handle);
  }

  dropHandle(token) {
    this.#handles.delete(token);
  }

  /** Whether a reply or a download is awaited (the process then keeps Node running). */
  get busy() {
    return this.#replies.size > 0 || this.#handles.size > 0;
  }

  /**
   * One line of the worker's output (a message or a batch): the actions it calls for, in order.
   * An action is a function to call, or `{ warning }` for the worker's warning to show its user.
   */
  route(line) {
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      return []; // not a protocol message; the worker never writes one, so nothing is lost
    }
    const actions = [];
    for (const item of Array.isArray(message) ? message : [message]) {
      const action = this.#routeOne(item);
      if (action) actions.push(action);
    }
    return actions;
  }

  #routeOne(message) {
    if (message == null || typeof message !== 'object') return null;
    if (message.method === 'worker/warning') {
      // Once per code (the worker sends each once; a repeat would only be noise).
      const warning = message.params;
      if (typeof warning?.code !== 'string' || this.#warned.has(warning.code)) return null;
      this.#warned.add(warning.code);
      return { warning: { code: warning.code, message: String(warning.message ?? ''), details: warning.details ?? {} } };
    }
    if (typeof message.method === 'string') {
      const handle = this.#handles.get(message.params?.token);
      if (!handle) {
        discardShared(message.params); // nobody will take this result's shared-memory file
        return null;
      }
      const event = parseEvent(message.method, message.params, handle.url);
      if (!event) return null;
      if (event.type === 'completed') this.#handles.delete(event.token);
      return () => handle._deliver(event);
    }
    const reply = this.#replies.get(message.id);
    if (!reply) return null;
    this.#replies.delete(message.id);
    if (message.error) {
      const error = new RequestError(message.error.code, message.error.message, message.error.data);
      return () => reply.reject(error);
    }
    return () => reply.resolve(message.result);
  }

  /** The worker is gone: every awaited reply and live download fails with `error`. */
  failAll(error) {
    if (!this.failure) this.failure = error;
    const actions = [];
    for (const reply of this.#replies.values()) actions.push(() => reply.reject(error));
    for (const handle of this.#handles.values()) actions.push(() => handle._fail(error));
    this.#replies.clear();
    this.#handles.clear();
    return actions;
  }
}
