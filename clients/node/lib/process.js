// The worker's process and its framing: messages in as lines on stdin, lines out of stdout,
// the last lines of stderr kept for error messages.
import { spawn } from 'node:child_process';

/** Splits text arriving in chunks into whole lines, of any length (inline images are often far over 64 KiB). */
export class LineFramer {
  #pending = '';

  /** The complete, non-empty lines that `chunk` finishes. */
  push(chunk) {
    const lines = (this.#pending + chunk).split('\n');
    this.#pending = lines.pop();
    return lines.filter((line) => line);
  }

  /** What is left after the stream's end (a last line without its newline). */
  flush() {
    const rest = this.#pending;
    this.#pending = '';
    return rest.trim() ? [rest] : [];
  }
}

/**
 * A spawned image-worker: `send(message)` writes one JSON line, `onLine` gets each line of
 * stdout, `stderrTail` the last `stderrLines` lines of stderr, and `exited` resolves to
 * `{ code, signal }` (or `{ error }` when it could not start) once the process is gone and both
 * of its output streams have ended, after the last line has been handed over.
 */
export class WorkerProcess {
  #child;
  /** True while this tick's lines are held for one write (`send`). */
  #corked = false;
  #stderr = [];
  #stderrLines;
  /** Whether the process and its pipes keep the event loop alive now (a new child does). */
  #alive = true;

  constructor(binary, { args = [], env, cwd, stderrLines = 40 } = {}, onLine) {
    this.#stderrLines = stderrLines;
    // A process group of its own (`detached`): a terminal's Ctrl-C reaches Node only, whose
    // AbortSignal or exit then ends the job, instead of the worker dying first and every
    // download in flight failing.
    this.#child = spawn(binary, args, { stdio: ['pipe', 'pipe', 'pipe'], env, cwd, detached: true });
    this.pid = this.#child.pid;
    this.#child.stdin.on('error', () => {}); // EPIPE: the exit is reported through `exited`
    const stdout = new LineFramer();
    this.#child.stdout.setEncoding('utf8');
    this.#child.stdout.on('data', (text) => { for (const line of stdout.push(text)) onLine(line); });
    const stderr = new LineFramer();
    this.#child.stderr.setEncoding('utf8');
    this.#child.stderr.on('data', (text) => { for (const line of stderr.push(text)) this.#keepStderr(line); });
    const stdoutEnded = new Promise((resolve) => this.#child.stdout.on('end', resolve));
    const stderrEnded = new Promise((resolve) => this.#child.stderr.on('end', () => {
      for (const line of stderr.flush()) this.#keepStderr(line);
      resolve();
    }));
    const closed = new Promise((resolve) => this.#child.on('close', (code, signal) => resolve({ code, signal })));
    const spawnFailed = new Promise((resolve) => this.#child.on('error', (error) => resolve({ error })));
    this.exited = Promise.race([
      Promise.all([closed, stdoutEnded, stderrEnded]).then(([status]) => status),
      spawnFailed,
    ]).then((status) => {
      for (const line of stdout.flush()) onLine(line);
      return status;
    });
  }

  /**
   * Whether the process and its pipes keep Node's event loop alive. An idle worker should not:
   * a script that ends without `close()` then exits, and the worker sees its stdin close.
   */
  keepAlive(active) {
    // Asked after every line the worker sends: only a change touches the handles (four calls
    // into libuv each time were a tenth of the client's own time in a bulk job).
    if (active === this.#alive) return;
    this.#alive = active;
    const method = active ? 'ref' : 'unref';
    this.#child[method]();
    for (const stream of [this.#child.stdin, this.#child.stdout, this.#child.stderr]) stream?.[method]?.();
  }

  /** The last lines of standard error. */
  get stderrTail() {
    return [...this.#stderr];
  }

  #keepStderr(line) {
    this.#stderr.push(line);
    if (this.#stderr.length > this.#stderrLines) this.#stderr.shift();
  }

  /**
   * Writes one message as a JSON line. The lines sent in one turn of the event loop leave in one
   * write (corked until the next tick): a burst of downloads wakes the worker's reader once.
   */
  send(message) {
    const stdin = this.#child.stdin;
    if (!this.#corked) {
      this.#corked = true;
      stdin.cork();
      process.nextTick(() => {
        this.#corked = false;
        stdin.uncork();
      });
    }
    stdin.write(JSON.stringify(message) + '\n');
  }

  /** Closes stdin (the worker drains and exits). */
  endInput() {
    this.#child.stdin.end();
  }

  kill(signal = 'SIGKILL') {
    this.#child.kill(signal);
  }
}
