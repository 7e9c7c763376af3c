// Type declarations of the image-worker Node client (index.js).
import { EventEmitter } from 'node:events';

export declare const PROTOCOL_VERSION: string;
export type Priority = 'veryLow' | 'low' | 'normal' | 'high' | 'veryHigh';
export type Format = 'original' | 'png' | 'rgba' | 'rgb' | 'gray';
export type Token = string | number;
export declare const PRIORITIES: readonly Priority[];
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
  readonly reason: 'timeout' | 'dns' | 'tls' | 'connection' | 'reset' | 'truncated' | 'redirect' | 'protocol' | 'io' | null;
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
export declare class Cancelled extends DownloadError {}
export declare const ERRORS_BY_CODE: Record<number, typeof DownloadError>;
export declare function downloadError(error: unknown, token?: Token, url?: string): DownloadError;

/** What a delivered image (final or partial) carries. */
export interface Delivered {
  width?: number;
  height?: number;
  sourceFormat?: string;
  orientation?: number;
  mimeType: string | null;
  byteLength: number;
  pixelFormat?: 'rgba' | 'rgb' | 'gray';
  stride?: number;
  /** delivery 'file' */
  path?: string;
  uri?: string;
  /** delivery 'inline': the bytes, decoded from base64 */
  data?: Buffer;
}

export interface ImageResult extends Delivered {
  token: Token;
  url: string;
  status: number;
}

interface EventBase {
  token: Token;
  raw: Record<string, unknown>;
}
export interface StartedEvent extends EventBase { type: 'started'; url: string }
export interface ResponseEvent extends EventBase {
  type: 'response';
  status: number;
  expectedBytes: number | null;
  mimeType: string | null;
  url: string;
  httpVersion: string | null;
}
export interface ProgressEvent extends EventBase { type: 'progress'; receivedBytes: number; expectedBytes: number | null }
export interface PartialImageEvent extends EventBase, Delivered {
  type: 'partialImage';
  sequence: number;
  filledRows: number;
  passes: number;
}
export interface CompletedEvent extends EventBase {
  type: 'completed';
  outcome: 'success' | 'error' | 'cancelled';
  image: ImageResult | null;
  error: DownloadError | null;
}
export type DownloadEvent = StartedEvent | ResponseEvent | ProgressEvent | PartialImageEvent | CompletedEvent;

export declare const EVENT_FIELDS: Record<string, string[]>;
export declare const IMAGE_FIELDS: string[];
export declare function parseEvent(method: string, params: unknown, url?: string): DownloadEvent | null;

export interface DownloadOptions {
  /** Deliver a file into this directory (named after the URL). */
  dir?: string;
  /** Deliver a file at this path. */
  path?: string;
  /** Deliver the bytes in the completed event (`image.data`). */
  inline?: boolean;
  /** Default 'original'; 'png' when `progressive`. */
  format?: Format;
  /** Partial images while bytes arrive. */
  progressive?: boolean;
  priority?: Priority;
  headers?: Record<string, string>;
  timeoutMs?: number;
  credentials?: { user: string; password: string };
  allowInvalidCertificates?: boolean;
  handleCookies?: boolean;
  retryFailed?: boolean;
  maxPixelSize?: number;
  maxPixelCount?: number;
  applyOrientation?: boolean;
  overwrite?: boolean;
  partialIntervalMs?: number;
  /** With `progressive`: partial images no larger than this on their longest side (the final image keeps its size). */
  partialMaxPixelSize?: number;
  /** Your own token (otherwise one is made). */
  token?: Token;
  /** Cancels the download when aborted. */
  signal?: AbortSignal;
}
export declare function downloadParams(url: string, token: Token, options?: DownloadOptions): Record<string, unknown>;

export declare class DownloadHandle extends EventEmitter implements AsyncIterable<DownloadEvent> {
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
  on(event: 'event', listener: (event: DownloadEvent) => void): this;
  on(event: 'started', listener: (event: StartedEvent) => void): this;
  on(event: 'response', listener: (event: ResponseEvent) => void): this;
  on(event: 'progress', listener: (event: ProgressEvent) => void): this;
  on(event: 'partialImage', listener: (event: PartialImageEvent) => void): this;
  on(event: 'completed', listener: (event: CompletedEvent) => void): this;
  on(event: 'error', listener: (error: Error) => void): this;
}

export interface WorkerOptions {
  /** The executable; otherwise $IMAGE_WORKER_BIN, PATH, then the repository's .build/release. */
  binary?: string;
  /** Extra command-line options, e.g. ['--file-root', '/data']. */
  args?: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** How many of the worker's last stderr lines to keep for error messages (default 40). */
  stderrLines?: number;
}

export declare function findBinary(explicit?: string): { path: string; source: 'argument' | '$IMAGE_WORKER_BIN' | 'PATH' | '.build/release' };
export declare function spawnWorker(options?: WorkerOptions): Promise<Worker>;

export declare class Worker extends EventEmitter {
  constructor(options?: WorkerOptions);
  readonly binary: string;
  readonly binarySource: string;
  readonly pid: number | undefined;
  readonly ready: Promise<Worker>;
  /** The `initialize` result: protocolVersion, serverInfo, capabilities, configuration. */
  readonly info: Record<string, any> | null;
  readonly stderrTail: string[];
  exitCode?: number | null;
  download(url: string, options?: DownloadOptions): DownloadHandle;
  cancel(token: Token): Promise<boolean>;
  setPriority(token: Token, priority: Priority): Promise<boolean>;
  cancelAll(): Promise<number>;
  configure(settings: Record<string, unknown>): Promise<Record<string, any>>;
  status(): Promise<Record<string, any>>;
  close(options?: { cancelPending?: boolean; timeoutMs?: number }): Promise<number | null>;
  kill(signal?: NodeJS.Signals): void;
  on(event: 'exit', listener: (code: number | null, signal: string | null) => void): this;
}

export declare function readImageBytes(image: Delivered): Promise<Buffer>;
