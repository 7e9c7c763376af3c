// Partly generated: the blocks between GENERATED markers are written by scripts/generate-options.py
// from protocol/schema (CI checks they are current); the rest is written by hand.
// Type declarations of the image-worker Node client (index.js). Self-contained: they type-check
// with `tsc --strict` and the ES2022 library alone, with or without @types/node.

declare global {
  // As @types/node and TypeScript 5.2's esnext.disposable declare it (Node >= 18.18 has it).
  interface SymbolConstructor {
    readonly asyncDispose: unique symbol;
  }
}

/**
 * Bytes: a Node `Buffer` at run time. Typed `Buffer` where Node's types are loaded (they declare
 * the global `Buffer`), `Uint8Array` (its base class) where they are not.
 */
export type Bytes = typeof globalThis extends { Buffer: { alloc(size: number): infer B } } ? B : Uint8Array;

/** An `AbortSignal` (Node's, or any with this shape). */
export interface AbortSignalLike {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
}

/**
 * The part of Node's EventEmitter the client's classes are used through, typed by event name (at
 * run time they are EventEmitters).
 */
export interface TypedEmitter<Events> {
  on<K extends keyof Events>(event: K, listener: Events[K]): this;
  once<K extends keyof Events>(event: K, listener: Events[K]): this;
  off<K extends keyof Events>(event: K, listener: Events[K]): this;
  addListener<K extends keyof Events>(event: K, listener: Events[K]): this;
  removeListener<K extends keyof Events>(event: K, listener: Events[K]): this;
  removeAllListeners(event?: keyof Events): this;
  listenerCount(event: keyof Events): number;
}

export declare const PROTOCOL_VERSION: string;
export type Token = string | number;
export declare const PRIORITIES: readonly Priority[];
export declare const CACHE_POLICIES: readonly CachePolicy[];
export declare const FORMATS: readonly Format[];

export declare class ImageWorkerError extends Error {}
export declare class BinaryNotFound extends ImageWorkerError {}
export declare class WorkerExited extends ImageWorkerError {
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stderr: string[];
}
export declare class WorkerClosed extends ImageWorkerError {}
export declare class RequestError extends ImageWorkerError {
  readonly code: number;
  readonly rpcMessage: string;
  readonly data: unknown;
}
export declare class DownloadError extends ImageWorkerError {
  static readonly code: number;
  readonly code: number;
  /** The protocol's error name, e.g. 'NetworkError'. */
  readonly errorName: string;
  readonly rpcMessage: string;
  readonly data: Record<string, unknown>;
  readonly token: Token;
  readonly url: string;
  /** Attempts made, when there were several (retries) or the download ended at its deadline; else null. */
  readonly attempts: number | null;
  /** Why each attempt before the last ended: its error object, in order. */
  readonly earlierAttempts: Array<{ code: number; message: string; data: Record<string, unknown> }>;
  /** Where the time went before the error (from the `download/completed` event); null otherwise. */
  metrics: Metrics | null;
}
export declare class InvalidURL extends DownloadError {}
export declare class BadImageData extends DownloadError {}
export declare class CacheNotModified extends DownloadError {}
export declare class InvalidDownloadOperation extends DownloadError {}
export declare class InvalidDownloadStatusCode extends DownloadError {
  readonly statusCode: number | null;
  readonly retryAfterSeconds: number | null;
}
export declare class NetworkError extends DownloadError {
  readonly reason: 'timeout' | 'deadline' | 'dns' | 'tls' | 'connection' | 'reset' | 'truncated' | 'redirect' | 'protocol' | 'io' | 'proxy'
    | 'notCached' | 'hostDown' | null;
}
export declare class LimitExceeded extends DownloadError {
  readonly limit: 'bodyBytes' | 'pixels' | 'scans' | null;
  readonly maximum: number | null;
}
export declare class UnsupportedFormat extends DownloadError {}
export declare class BlockedURL extends DownloadError {}
export declare class OutputFailed extends DownloadError {
  readonly path: string | null;
}
/** The image's size, from its header before any decode, fails one of the download's filters. */
export declare class Filtered extends DownloadError {
  readonly filter: 'minImageSize' | 'maxImageArea' | 'maxAspectRatio' | null;
}
/** The response's X-Robots-Tag says a directive on `disallowedHeaderDirectives`: the body was not read. */
export declare class OptedOut extends DownloadError {
  readonly directives: string[] | null;
}
export declare class Cancelled extends DownloadError {}
export declare const ERRORS_BY_CODE: Record<number, typeof DownloadError>;
export declare function downloadError(error: unknown, token?: Token, url?: string): DownloadError;

// BEGIN GENERATED EVENTS (scripts/generate-options.py from protocol/schema/events: do not edit)
/** What a delivered image (final or partial) carries. */
export interface Delivered {
  /** The delivered image's width (decoded formats, and originals with verify). */
  width?: number;
  /** The delivered image's height. */
  height?: number;
  /** The downloaded image's format, from its bytes. */
  sourceFormat?: 'jpeg' | 'png' | 'webp' | 'gif' | 'avif' | 'bmp' | 'tiff' | 'heic' | 'jxl';
  /** The source's EXIF orientation, 1-8 (applied with applyOrientation). */
  orientation?: number;
  /** The delivered bytes' media type. */
  mimeType: string | null;
  /** The bytes received: the original's size in bytes (what is delivered may be smaller). */
  byteLength: number;
  /** Raw formats: the channels of each pixel. */
  pixelFormat?: 'rgba' | 'rgb' | 'gray';
  /** Raw formats: bytes per row. */
  stride?: number;
  /** Delivery file: the file written (or kept); delivery shared: the file in shared memory. */
  path?: string;
  /** Path as a file: URI. */
  uri?: string;
  /**
   * The bytes: delivery 'inline' (decoded from base64), or a decoded format without `dir`/`path` (delivery 'shared':
   * read from the worker's shared memory, its file already given back; inline base64 when 16 KiB or less, or when
   * shared memory had no room).
   */
  data?: Bytes;
}

/** A downloaded image: `download/completed`'s fields on success. */
export interface ImageResult extends Delivered {
  token: Token;
  /** The download's URL as given (user information removed). */
  url: string;
  /** Where redirects led, as fetched (percent-encoded, no fragment). */
  finalUrl: string;
  /** The response's HTTP status. */
  status: number;
  /** The HTTP cache answered (--cache-dir): without a request, or after a 304 (revalidated). */
  fromCache: boolean;
  /** The stored response was revalidated: the server answered 304 to a conditional request. */
  revalidated: boolean;
  /**
   * Decoded formats (and original with verify): the original image's width as stored, before scaling and orientation.
   */
  sourceWidth?: number;
  /**
   * Decoded formats (and original with verify): the original image's height as stored, before scaling and
   * orientation.
   */
  sourceHeight?: number;
  /**
   * The source is an animation (GIF, WebP, AVIF sequence): the image is its first frame, or with output.frames all
   * every frame (frames, delaysMs).
   */
  animated?: true;
  /** An animated source's frames; absent: 1 (a still image). */
  frameCount?: number;
  /** An animated source's repetitions after the first play, 0: forever; absent when the file does not say. */
  loopCount?: number;
  /**
   * output.frames all: the frames delivered (1 for a still image; fewer than frameCount when the file is cut or
   * damaged after its first frame): raw formats hold them one after the other (frames x height x stride bytes), webp
   * and gif one animated file.
   */
  frames?: number;
  /**
   * output.frames all: how long each delivered frame is shown, in milliseconds, as the file says (a GIF's hundredths
   * of a second x 10; browsers show 0 and 10 as 100).
   */
  delaysMs?: number[];
  /**
   * With `colorProfile: 'keep'`: the source's ICC profile (what its stored values mean), decoded from base64; absent
   * when it has none.
   */
  iccProfile?: Bytes;
  /** The delivered bytes' SHA-256 (lowercase hex), with output.sha256 or a {sha256} name. */
  sha256?: string;
  /**
   * With output.sha256: the SHA-256 of the bytes received (the original), lowercase hex; sha256 is the delivered
   * bytes'.
   */
  sourceSha256?: string;
  metrics: Metrics;
  /** skipExisting (or a resumed manifest) found the file: kept as it was, nothing fetched. */
  skipped: boolean;
  /**
   * With `frames: 'all'` and a raw format (`rgba`, `rgb`, `gray`): one Buffer per frame delivered, each a view of
   * `data` (height x stride bytes).
   */
  frameData?: Bytes[];
}

/** Where a token's download spent its time (every download/completed); a phase that did not happen is absent. */
export interface Metrics {
  /** From the download request to its fetch starting (or to its end, if it never left the queue). */
  queuedMs?: number;
  /**
   * The last attempt waited for new connections (a redirect hop may need its own): from asking for each to its being
   * ready, added up (DNS, TCP, TLS and a proxy's tunnel together).
   */
  connectMs?: number;
  /** Every hop of the last attempt went out on a connection that was ready before it was asked for. */
  reusedConnection?: boolean;
  /** From the last attempt's start to its response head (redirects included). */
  ttfbMs?: number;
  /** From the response head to the body's end (or the failure). */
  transferMs?: number;
  /** decoding, scaling and encoding, from a decode slot to the rendered image. */
  decodeMs?: number;
  /** Writing the file (delivery file). */
  writeMs?: number;
  /** Body bytes read from the network, every attempt together (0 from the cache). */
  wireBytes: number;
  /** The last attempt's HTTP version. */
  httpVersion?: string;
  /** The peer of the last attempt's connection, ip:port (a proxy's through one). */
  remoteAddress?: string;
  /** Attempts made, retries included. */
  attempts: number;
  /** Attempts that resumed a body part-way (Range); absent: none. */
  resumed?: number;
  /** Redirects followed by the last attempt. */
  redirects: number;
  /** The HTTP cache answered. */
  fromCache: boolean;
  /** The cache's stored response was revalidated (a 304). */
  revalidated?: true;
}

interface EventBase {
  token: Token;
  raw: Record<string, unknown>;
}

/** `download/started`. */
export interface StartedEvent extends EventBase {
  type: 'started';
  url: string;
}

/** `download/response`. */
export interface ResponseEvent extends EventBase {
  type: 'response';
  status: number;
  /** The body's length from Content-Length; null without one. */
  expectedBytes: number | null;
  mimeType: string | null;
  /** The download's URL as given (user information removed). */
  url: string;
  /** Where redirects led, as fetched (percent-encoded, no fragment). */
  finalUrl: string;
  httpVersion: string | null;
}

/** `download/progress`. */
export interface ProgressEvent extends EventBase {
  type: 'progress';
  receivedBytes: number;
  /** The body's length from Content-Length; null without one. */
  expectedBytes: number | null;
}

/** `download/partialImage`. */
export interface PartialImageEvent extends EventBase, Delivered {
  type: 'partialImage';
  /** 1 for the token's first partial image, then 2, 3… */
  sequence: number;
  /** Rows decoded so far, from the top (all of them once a progressive pass is complete). */
  filledRows: number;
  /** Progressive passes (JPEG scans, PNG Adam7 passes) complete so far. */
  passes: number;
}
// END GENERATED EVENTS
export interface CompletedEvent extends EventBase {
  type: 'completed';
  /** The download's URL as given (user information removed). */
  url: string;
  outcome: 'success' | 'error' | 'cancelled';
  image: ImageResult | null;
  error: DownloadError | null;
  /** Where the time went (null only from a worker that does not say). */
  metrics: Metrics | null;
}
export type DownloadEvent = StartedEvent | ResponseEvent | ProgressEvent | PartialImageEvent | CompletedEvent;

export declare const EVENT_FIELDS: Record<string, string[]>;
export declare const IMAGE_FIELDS: string[];
export declare function parseEvent(method: string, params: unknown, url?: string): DownloadEvent | null;

// BEGIN GENERATED OPTIONS (scripts/generate-options.py from protocol/schema: do not edit)
export type Priority = 'veryLow' | 'low' | 'normal' | 'high' | 'veryHigh';
export type CachePolicy = 'default' | 'reload' | 'preferCache' | 'cacheOnly';
export type Format = 'original' | 'png' | 'jpeg' | 'webp' | 'gif' | 'rgba' | 'rgb' | 'gray';
export type Verify = false | true | 'header' | 'full';
export type Fit = 'cover' | 'contain' | 'fill' | 'inside' | 'outside';
export type Position = 'center' | 'top' | 'right top' | 'right' | 'right bottom' | 'bottom' | 'left bottom' | 'left' | 'left top' | 'entropy' | 'attention';
export type ColorProfile = 'srgb' | 'keep';
export type Frames = 'first' | 'all';
export type ChromaSubsampling = '4:2:0' | '4:2:2' | '4:4:4';
export type ExecutionOrder = 'fifo' | 'lifo';

/** `download()`'s options (protocol/SPEC.md, `download`): each optional. */
export interface DownloadOptions {
  /** The order among queued downloads (default 'normal'). */
  priority?: Priority;
  /** Request headers, added to the worker's own. */
  headers?: Record<string, string>;
  /** Idle timeout per attempt. */
  timeoutMs?: number;
  /**
   * wall-clock limit from the download's start to its body, over every attempt (NetworkError with reason deadline
   * past it).
   */
  deadlineMs?: number;
  /** Retries after a transient failure, for this download (default: the worker's maxRetries). */
  maxRetries?: number;
  /** The first retry's delay for this download, doubling each time. */
  retryDelayMs?: number;
  /** User and password for basic authentication. */
  credentials?: { user: string; password: string };
  /** Accept TLS certificates that do not verify (the HTTP cache is bypassed). */
  allowInvalidCertificates?: boolean;
  /** Send and store cookies (the worker's jar). */
  handleCookies?: boolean;
  /** Fetch a URL that failed recently instead of failing it at once. */
  retryFailed?: boolean;
  /**
   * How the HTTP cache answers (when the worker has one): default (RFC 9111), reload (ignore stored responses),
   * preferCache (any stored copy, else load), cacheOnly (a stored copy or NetworkError notCached).
   */
  cachePolicy?: CachePolicy;
  /** Partial images while bytes arrive (a decoded format: png unless one is given). */
  progressive?: boolean;
  /** Only the terminal event (download/completed): no started, response or progress events; not with progressive. */
  quiet?: boolean;
  /**
   * Deliver the bytes in the completed event (base64 on the wire); without it, dir or path, a decoded format comes
   * through shared memory.
   */
  inline?: boolean;
  /** Delivery file: the file to write. */
  path?: string;
  /** Delivery file: the directory to write into, the file named after the URL (or name, nameTemplate). */
  dir?: string;
  /**
   * Original (the bytes as downloaded), or decoded to png, jpeg, webp or gif, or raw rgba, rgb or gray (JPEG, PNG,
   * WebP, GIF, AVIF and JPEG XL are decoded) (default 'original').
   */
  format?: Format;
  /** With dir: the file's name (a relative path; '/' makes subdirectories), used as given. */
  name?: string;
  /**
   * With dir: the file's name from {token}, {name}, {ext}, {host}, {sha256}, {sha256:N} and {index} (the entry's
   * position in a list, output.index; {index:5} zero-pads it); {{ and }} for braces.
   */
  nameTemplate?: string;
  /**
   * With nameTemplate: the entry's position in a list (from 0), for {index} and {index:N} (zero-padded to N digits,
   * 1-20); the clients' bulk helpers and get send it.
   */
  index?: number;
  /** Replace a file of the same name (default: name-1.ext, name-2.ext, ...). */
  overwrite?: boolean;
  /** A target file that exists already is kept and reported (skipped: true); nothing is fetched. */
  skipExisting?: boolean;
  /**
   * original: check the bytes are an image before they are saved: true or header reads the header (UnsupportedFormat,
   * BadImageData; the event adds width and height), full also decodes every pixel without writing them (a truncated
   * body, a corrupt scan, a bad CRC, a size over the pixel limit fail); false saves whatever came.
   */
  verify?: Verify;
  /** Report the delivered bytes' SHA-256 in the completed event. */
  sha256?: boolean;
  /** Decoded formats: scale down so the longest side is at most this. */
  maxPixelSize?: number;
  /** Decoded formats: scale down to at most this many pixels. */
  maxPixelCount?: number;
  /**
   * Fail with Filtered, before any decode, an image whose shorter side is smaller than this (img2dataset's
   * min_image_size; read from its header, for original bytes too).
   */
  minImageSize?: number;
  /** Fail with Filtered, before any decode, an image of more pixels than this (width x height from its header). */
  maxImageArea?: number;
  /**
   * Fail with Filtered, before any decode, an image whose longer side is more than this many times its shorter side.
   */
  maxAspectRatio?: number;
  /**
   * Decoded formats: the box's width in pixels (sharp's resize): with height, the image fits the box as fit says;
   * alone, the height follows the aspect ratio.
   */
  width?: number;
  /** Decoded formats: the box's height in pixels; alone, the width follows the aspect ratio. */
  height?: number;
  /**
   * With width and height: cover (crop to fill the box), contain (fit inside it, the rest background), fill
   * (stretch), inside (fit inside, no canvas) or outside (cover, no crop) (default 'cover').
   */
  fit?: Fit;
  /**
   * With width or height: the part fit cover keeps, or where fit contain puts the image on its canvas; entropy and
   * attention (cover only) choose the part from the pixels, as sharp's strategies: the most detail, or what draws the
   * eye (default 'center').
   */
  position?: Position;
  /**
   * The colour of fit contain's canvas, #rrggbb or #rrggbbaa (default opaque black), and what jpeg, rgb and gray (no
   * alpha) flatten transparency onto (without it their alpha is dropped, the colour stored under it showing).
   */
  background?: string;
  /**
   * With width or height: never larger than the image (cover and inside may then come out smaller than the box;
   * contain pads to it).
   */
  withoutEnlargement?: boolean;
  /**
   * Decoded formats: srgb converts the colours to sRGB through what the file says of them (an embedded ICC profile, a
   * PNG cICP or cHRM chunk, AVIF colour primaries); keep gives the values as stored and the file's ICC profile in
   * iccProfile (files written with it embedded) (default 'srgb').
   */
  colorProfile?: ColorProfile;
  /**
   * Decoded formats: first (an animation's first frame) or all: every frame of a GIF, animated WebP or AVIF sequence,
   * composited as a browser shows them and sized as asked, with delaysMs and loopCount in the result; format webp
   * writes an animated WebP, gif a GIF, rgba, rgb and gray the frames one after the other (frames x height x stride
   * bytes). Every frame counts against maxPixels and maxFrames (default 'first').
   */
  frames?: Frames;
  /** Decoded formats: turn the image upright by its EXIF orientation. */
  applyOrientation?: boolean;
  /** With progressive: the least time between two partial images (default 200). */
  partialIntervalMs?: number;
  /** With progressive: partial images no larger than this on their longest side; the final image keeps its size. */
  partialMaxPixelSize?: number;
  /** Format jpeg or webp: 1-100 (defaults 90 and 80); with lossless, WebP's effort. */
  quality?: number;
  /** Format webp: lossless instead of lossy. */
  lossless?: boolean;
  /** Format jpeg: how colour is stored (default '4:2:0'). */
  chromaSubsampling?: ChromaSubsampling;
  /** Your own token (otherwise one is made). */
  token?: Token;
  /** Cancels the download when aborted. */
  signal?: AbortSignalLike;
}

/** `configure()`'s settings (protocol/SPEC.md, `configure`): each optional, applied all at once or not at all. */
export interface Settings {
  /** Fetches running at once, 1…1024 (default 6). */
  maxConcurrentDownloads?: number;
  /** Fetches running at once for one host (scheme, host, port) (default 6). */
  maxConcurrentPerHost?: number;
  /** Fetch starts per second for one host, evenly spaced; 0: no limit (default 0). */
  maxRequestsPerSecondPerHost?: number;
  /** Among equal priorities (default 'fifo'). */
  executionOrder?: ExecutionOrder;
  /** While true, nothing new starts; running fetches go on. */
  suspended?: boolean;
  /** Idle timeout in ms, 1…86400000 (default 15000). */
  timeoutMs?: number;
  /** Default request headers (replaces the previous set). */
  headers?: Record<string, string>;
  /** Fraction of the expected size (0…1) between two progress events. */
  minimumProgressInterval?: number;
  /** Time between two progress events, 0…3600000 ms (default 100). */
  progressIntervalMs?: number;
  /** Retries after a transient failure, 0…20 (default 2). */
  maxRetries?: number;
  /** The first retry waits between half and all of this; it doubles each time (default 250). */
  retryBaseDelayMs?: number;
  /** Cap of one wait, also of a server's Retry-After (default 10000). */
  retryMaxDelayMs?: number;
  /** Larger bodies fail with LimitExceeded (default 256 MiB). */
  maxBodyBytes?: number;
  /** 0…100 (default 10). */
  maxRedirects?: number;
  /** How long a URL stays on the failed-URL list (default 600000). */
  failedURLExpiryMs?: number;
  /**
   * Connection failures in a row (refused, unreachable, connect timeout) after which a host is down: its downloads
   * wait without a slot while one at a time probes it, and fail with NetworkError reason hostDown if it is still down
   * after hostDownMs (0: never) (default 3).
   */
  hostDownAfter?: number;
  /**
   * How long a down host's downloads wait for it before they fail with hostDown, and how long they then fail at once
   * before the next probe (default 30000).
   */
  hostDownMs?: number;
  /** The default User-Agent (default image-worker/VERSION). */
  userAgent?: string;
  /**
   * A token naming this job to the sites it fetches from (img2dataset's user_agent_token): added to the User-Agent as
   * "(compatible; TOKEN)", and a user agent X-Robots-Tag directives may be addressed to.
   */
  userAgentToken?: string;
  /**
   * X-Robots-Tag directives that fail a download with OptedOut before its body is read, when the response says one
   * for every crawler or for this worker (its User-Agent's product or userAgentToken); img2dataset's are noai,
   * noimageai, noindex, noimageindex (and none) (default none).
   */
  disallowedHeaderDirectives?: string[];
  /** Images with more pixels fail with LimitExceeded (default 100,000,000). */
  maxPixels?: number;
  /** Progressive JPEGs with more scans fail with LimitExceeded (default 1000). */
  maxProgressiveScans?: number;
  /** Animated GIF, WebP and AVIF files with more frames fail with LimitExceeded (limit "frames"). */
  maxFrames?: number;
  /**
   * Tokens decoding, scaling, encoding or writing at once (the delivery stage); default: the CPUs the worker may use
   * (its affinity mask, capped by a cgroup CPU quota).
   */
  decodeConcurrency?: number;
  /**
   * Bytes of bitmaps of the decodes in flight, by their headers' sizes in RGBA; a decode past it waits, one larger
   * runs alone.
   */
  decodeMemoryBytes?: number;
  /** Delivery shared: files written and not yet taken by the client, at most; a delivery past it waits. */
  sharedMaxImages?: number;
  /** Delivery shared: bytes of files written and not yet taken by the client, at most. */
  sharedMaxBytes?: number;
  /**
   * Downloads live at once (queued, running or delivering); past it the worker reads no more input until one ends,
   * and while suspended refuses downloads with -32001.
   */
  maxLiveDownloads?: number;
  /** The HTTP cache's size on disk (--cache-dir); least recently used entries go past it. */
  cacheMaxBytes?: number;
  /**
   * For http and https URLs alike: a proxy URL: http://[user:pass@]host[:port] (CONNECT tunnels for https too) or
   * socks5://host[:port] (no credentials); "" for none (direct).
   */
  proxy?: string;
  /**
   * For http URLs: a proxy URL: http://[user:pass@]host[:port] (CONNECT tunnels for https too) or
   * socks5://host[:port] (no credentials); "" for none (direct).
   */
  httpProxy?: string | null;
  /**
   * For https URLs: a proxy URL: http://[user:pass@]host[:port] (CONNECT tunnels for https too) or
   * socks5://host[:port] (no credentials); "" for none (direct).
   */
  httpsProxy?: string | null;
  /**
   * Hosts reached directly (replaces the list): comma-separated names (with their subdomains), IP addresses, CIDR
   * ranges, optional :port, or *.
   */
  noProxy?: string;
  /** `true` empties the failed-URL list and forgets which hosts are down (not a setting). */
  clearFailedURLs?: boolean;
}
// END GENERATED OPTIONS
export declare function downloadParams(url: string, token: Token, options?: DownloadOptions): Record<string, unknown>;

/** An input of downloadMany: a URL, or one with the name of its file. */
export type BulkEntry = string | { url: string; name?: string } | [string, string];

export interface DownloadManyOptions extends Omit<DownloadOptions, 'token' | 'signal' | 'name'> {
  /** Downloads at once (default 6); a few times as many are sent ahead. */
  concurrency?: number;
  /** Cancels what is under way; the iterator then throws the signal's reason. */
  signal?: AbortSignalLike;
  /** A JSON Lines path: one record per URL as it ends. */
  manifest?: string;
  /** With `manifest`: fetch only what it does not show as done (those come from it, `skipped`). */
  resume?: boolean;
}

interface BulkOutcomeCommon {
  /** The URL's position in the input, from 0. */
  index: number;
  url: string;
  name: string | undefined;
}

/** A URL of downloadMany that ended with its image. */
export interface BulkSuccess extends BulkOutcomeCommon {
  ok: true;
  /** The file was there already (`skipExisting`, or done in the resumed manifest). */
  skipped: boolean;
  image: ImageResult;
  error: null;
}

/** A URL of downloadMany that ended without an image: `error` says why. */
export interface BulkFailure extends BulkOutcomeCommon {
  ok: false;
  skipped: false;
  image: null;
  error: Error;
}

/**
 * What became of one URL of downloadMany: `ok` tells the two apart, for TypeScript too (after
 * `if (o.ok)`, `o.image` is an ImageResult; otherwise `o.error` is an Error).
 */
export type BulkOutcome = BulkSuccess | BulkFailure;

/** One line of a manifest (GUIDE.md, "Manifests"). */
export interface ManifestRecord {
  index: number;
  url: string;
  name?: string;
  outcome: 'ok' | 'skipped' | 'failed' | 'cancelled';
  path?: string;
  bytes?: number;
  format?: string;
  width?: number;
  height?: number;
  sha256?: string;
  /** The original's SHA-256 and stored size (a thumbnail's `sha256`, `width` and `height` are the thumbnail's). */
  sourceSha256?: string;
  sourceWidth?: number;
  sourceHeight?: number;
  error?: { name: string; message: string; code?: number; attempts?: number; limit?: string };
  ms?: number;
}

/** downloadMany on a worker of its own (closed at the end). */
export declare function downloadMany(
  urls: Iterable<BulkEntry> | AsyncIterable<BulkEntry>,
  options?: DownloadManyOptions & { binary?: string; args?: string[]; env?: Record<string, string | undefined> },
): AsyncGenerator<BulkOutcome, void, undefined>;
/** Options of downloadDataset: the table's columns, the shards, and get's options in camel case. */
export interface DatasetOptions extends Pick<DownloadOptions, 'priority' | 'progressive' | 'format' | 'quality' | 'lossless' | 'minImageSize' | 'maxImageArea' | 'maxAspectRatio' | 'maxPixelSize' | 'width' | 'height' | 'fit' | 'position' | 'background' | 'withoutEnlargement' | 'applyOrientation' | 'colorProfile' | 'frames' | 'partialMaxPixelSize' | 'deadlineMs' | 'cachePolicy' | 'retryDelayMs'> {
  /** How the table file is read (default: from its extension; Parquet: flat columns, any encoding and codec but LZO). */
  inputFormat?: 'txt' | 'csv' | 'tsv' | 'jsonl' | 'parquet';
  /** The column of the URLs (default `url`). */
  urlCol?: string;
  captionCol?: string;
  /** Columns kept beside each sample (its KEY.json and the shard's Parquet row). */
  saveColumns?: string[];
  /** The column of each row's SHA-256 (hex): bytes that differ fail the row. */
  verifyHashCol?: string;
  /** `webdataset` (default: `.tar` + `.parquet` + `_stats.json` a shard), `files` (img2dataset's: a folder a shard, `00000/KEY.jpg` with `KEY.txt` and `KEY.json`) or `parquet` (the images' bytes in the table); loose files: downloadMany. */
  outputFormat?: 'webdataset' | 'parquet' | 'files';
  /** Rows a shard (default 10000). */
  shardSize?: number;
  /** The number of the first shard (a part of a table run apart). */
  firstShard?: number;
  /** Keep the complete shards of an earlier run; write the others again. */
  resume?: boolean;
  binary?: string;
  /** The worker's progress on stderr. */
  progress?: boolean;
  /** Stops the run as a Ctrl-C would (complete shards kept); the promise rejects with its reason. */
  signal?: AbortSignalLike;
  concurrency?: number;
  perHost?: number;
  perHostRate?: number;
  hostDownAfter?: number;
  hostDownMs?: number;
  userAgentToken?: string;
  /** `X-Robots-Tag` directives that skip a row (default: img2dataset's; `[]` turns them off). */
  disallowedHeaderDirectives?: string[];
  timeoutMs?: number;
  maxRetries?: number;
}

/** What a dataset run left in its folder: every shard's stats summed (kept shards of a resumed run too). */
export interface DatasetResult {
  output: string;
  /** The complete shards (`00000.tar`; the folder `00000` for `files`; `00000.parquet` for Parquet output). */
  shards: string[];
  count: number;
  successes: number;
  failed: number;
  /** Rows by status: success, failed_to_download, failed_to_resize, failed_to_write, opted_out, filtered. */
  status: Record<string, number>;
  /** Failed rows by error name. */
  errors: Record<string, number>;
  /** get's exit status: 0 when every row succeeded, 1 when any failed. */
  exitStatus: 0 | 1;
}

/** Downloads every row of a table file (or of rows given) into img2dataset's shards (GUIDE.md, "Datasets"). */
export declare function downloadDataset(
  table: string | Iterable<Record<string, unknown>> | AsyncIterable<Record<string, unknown>>,
  output: string,
  options?: DatasetOptions,
): Promise<DatasetResult>;
/** @deprecated The worker fills `{index}` from the `index` option (downloadMany sends each entry's). */
export declare function fillIndex(template: string, index: number): string;
export declare function readManifest(path: string): ManifestRecord[];
export declare function manifestRecord(outcome: {
  index: number; url: string; name?: string; image: ImageResult | null; error: unknown; format: string; ms?: number;
}): ManifestRecord;

export interface DownloadHandleEvents {
  event: (event: DownloadEvent) => void;
  started: (event: StartedEvent) => void;
  response: (event: ResponseEvent) => void;
  progress: (event: ProgressEvent) => void;
  partialImage: (event: PartialImageEvent) => void;
  completed: (event: CompletedEvent) => void;
  /** Only when the worker failed or was closed under the download (with a listener; `done` rejects too). */
  error: (error: Error) => void;
}

export interface DownloadHandle extends TypedEmitter<DownloadHandleEvents> {}
export declare class DownloadHandle implements AsyncIterable<DownloadEvent> {
  readonly token: Token;
  readonly url: string;
  /** The image, or rejected with the download's error (a DownloadError subclass, RequestError, WorkerExited). */
  readonly done: Promise<ImageResult>;
  /** Resolves once the worker accepted the request. */
  readonly accepted: Promise<void>;
  readonly completed: CompletedEvent | null;
  readonly isDone: boolean;
  [Symbol.asyncIterator](): AsyncIterator<DownloadEvent>;
  cancel(): Promise<boolean>;
  setPriority(priority: Priority): Promise<boolean>;
}

export interface WorkerOptions {
  /** The executable; otherwise $IMAGE_WORKER_BIN, PATH, then the repository's .build/release. */
  binary?: string;
  /** Extra command-line options, e.g. ['--file-root', '/data']. */
  args?: string[];
  env?: { [name: string]: string | undefined };
  cwd?: string;
  /** How many of the worker's last stderr lines to keep for error messages (default 40). */
  stderrLines?: number;
}

/** The worker carried by this platform's package (`@image-worker/linux-x64-gnu`), or null. */
export declare function bundledBinary(): string | null;
export declare function findBinary(explicit?: string): { path: string; source: 'argument' | '$IMAGE_WORKER_BIN' | 'PATH' | 'bundled' | '.build/release' };
export declare function spawnWorker(options?: WorkerOptions): Promise<Worker>;

/** The worker's whole configuration, as `configure()` and `initialize` report it. */
export interface Configuration extends Required<Omit<Settings, 'clearFailedURLs' | 'proxy'>> {
  [other: string]: unknown;
}

export type Signal = 'SIGTERM' | 'SIGINT' | 'SIGKILL' | 'SIGHUP' | 'SIGQUIT' | 'SIGUSR1' | 'SIGUSR2';

/** Something the worker wants its user to know that fails nothing (protocol/SPEC.md, `worker/warning`). */
export interface WorkerWarning {
  code: 'sharedMemoryFull' | 'sharedMemoryWriteFailed' | 'sharedMemoryUnavailable' | 'proxySkipped' | (string & {});
  message: string;
  details: Record<string, string>;
}

export interface WorkerEvents {
  exit: (code: number | null, signal: string | null) => void;
  /** Each code once. Without a listener, the worker's warnings go to `process.emitWarning`. */
  warning: (warning: WorkerWarning) => void;
}

export interface Worker extends TypedEmitter<WorkerEvents> {}
/**
 * An image-worker process. Its child process does not keep Node running while no request or
 * download is under way, so a script that forgets `close()` still exits; `await using` closes it.
 */
export declare class Worker {
  constructor(options?: WorkerOptions);
  readonly binary: string;
  readonly binarySource: string;
  readonly pid: number | undefined;
  readonly ready: Promise<Worker>;
  /** The `initialize` result: protocolVersion, serverInfo, capabilities, configuration. */
  readonly info: Record<string, any> | null;
  readonly stderrTail: string[];
  /** The worker's warnings so far, each code once (also emitted: see `WorkerEvents.warning`). */
  readonly warnings: WorkerWarning[];
  exitCode?: number | null;
  download(url: string, options?: DownloadOptions): DownloadHandle;
  /** Many URLs, at most `concurrency` at once: outcomes in order of completion (see GUIDE.md, "Bulk jobs"). */
  downloadMany(urls: Iterable<BulkEntry> | AsyncIterable<BulkEntry>, options?: DownloadManyOptions): AsyncGenerator<BulkOutcome, void, undefined>;
  cancel(token: Token): Promise<boolean>;
  setPriority(token: Token, priority: Priority): Promise<boolean>;
  cancelAll(): Promise<number>;
  configure(settings: Settings): Promise<Configuration>;
  status(): Promise<Record<string, any>>;
  /**
   * `shutdown`, then `exit`: running downloads get `graceMs` (default 2000) to finish, then what is
   * left is cancelled (at once with `cancelPending`); the process is killed after `timeoutMs`
   * (default 30000).
   */
  close(options?: { cancelPending?: boolean; graceMs?: number; timeoutMs?: number }): Promise<number | null>;
  kill(signal?: Signal): void;
  /** `close()`, for `await using worker = await spawnWorker()`. */
  [Symbol.asyncDispose](): Promise<void>;
}

export declare function readImageBytes(image: Delivered): Promise<Bytes>;
