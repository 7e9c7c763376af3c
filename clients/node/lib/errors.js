// The client's errors: the process's, the protocol's request errors, one class per download error code.

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
    // The message does not repeat the name: `${e.name}: ${e.message}`, `String(e)` and a stack
    // trace each say it once ("Cancelled: the download was cancelled (URL)").
    const said = message === name ? `the download was ${name.toLowerCase()}` : message;
    super(`${said}${url ? ` (${url})` : ''}`);
    this.errorName = name;
    this.code = code ?? new.target.code;
    this.rpcMessage = message;
    this.data = { ...(data || {}) };
    this.token = token;
    this.url = url;
  }

  /** Attempts made, when there were several (retries) or the download ended at its deadline; else null. */
  get attempts() { return Number.isInteger(this.data.attempts) ? this.data.attempts : null; }

  /** Why each attempt before the last ended: its error object ({code, message, data}), in order. */
  get earlierAttempts() { return Array.isArray(this.data.earlierAttempts) ? this.data.earlierAttempts : []; }
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
export const Filtered = errorClass('Filtered', 1011, { filter: 'filter' });
export const OptedOut = errorClass('OptedOut', 1012, { directives: 'directives' });
export const Cancelled = errorClass('Cancelled', -32800);

export const ERRORS_BY_CODE = Object.fromEntries(
  [InvalidURL, BadImageData, CacheNotModified, InvalidDownloadOperation, InvalidDownloadStatusCode, NetworkError,
    LimitExceeded, UnsupportedFormat, BlockedURL, OutputFailed, Filtered, OptedOut, Cancelled].map((cls) => [cls.code, cls]));

export function downloadError(error, token, url) {
  const cls = ERRORS_BY_CODE[error?.code] ?? DownloadError;
  return new cls(String(error?.message ?? 'download failed'), { token, url, code: error?.code, data: error?.data });
}
