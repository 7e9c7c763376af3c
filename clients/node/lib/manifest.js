// Bulk-job manifests: JSON Lines, one record per input URL, appended as each URL ends (the same
// records as `image-worker get --manifest` and the Python client's, as
// protocol/schema/manifest-record.schema.json defines them; GUIDE.md, "Manifests").
import { randomBytes } from 'node:crypto';
import { closeSync, constants, existsSync, mkdirSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Cancelled, DownloadError } from './errors.js';

/**
 * `template` with `{index}` (`{index:N}`: zero-padded to N digits) replaced; `{{`, `}}` and the
 * worker's placeholders kept.
 * @deprecated The worker fills `{index}` from the `index` option (downloadMany sends each entry's);
 * kept for code that names files itself.
 */
export function fillIndex(template, index) {
  return template.replace(/\{\{|\}\}|\{index(?::(\d+))?\}/g, (match, width) => {
    if (match === '{{' || match === '}}') return match;
    if (width === undefined) return String(index);
    const n = Number(width);
    return n >= 1 && n <= 20 ? String(index).padStart(n, '0') : match;
  });
}

/** What identifies an input line across runs: its URL, and its own name when it gave one. */
/** `url` without its user information (`user:password@`), as the worker shows URLs. */
export function redactedURL(url) {
  if (typeof url !== 'string') return url;
  const schemeEnd = url.indexOf('://');
  if (schemeEnd < 0) return url;
  const start = schemeEnd + 3;
  let end = url.length;
  for (const stop of '/?#') {
    const found = url.indexOf(stop, start);
    if (found >= 0) end = Math.min(end, found);
  }
  const at = url.lastIndexOf('@', end - 1);
  return at < start ? url : url.slice(0, start) + url.slice(at + 1);
}

export function manifestKey(url, name) {
  const shown = redactedURL(url);
  return name == null ? shown : `${shown}\t${name}`;
}

/** The record of one URL's end (`format`: the format asked; 'original' records the bytes' own). */
export function manifestRecord({ index, url, name, image, error, format, ms }) {
  // Without the URL's password: a manifest is shared, logged, uploaded.
  const record = { index, url: redactedURL(url) };
  if (name != null) record.name = name;
  if (image) {
    record.outcome = image.skipped ? 'skipped' : 'ok';
    if (image.path != null) record.path = image.path;
    record.bytes = image.byteLength;
    const written = format === 'original' ? image.sourceFormat : format;
    if (written != null) record.format = written;
    for (const key of ['width', 'height', 'sha256', 'sourceSha256', 'sourceWidth', 'sourceHeight', 'orientation']) if (image[key] != null) record[key] = image[key];
  } else if (error instanceof Cancelled) {
    record.outcome = 'cancelled';
  } else {
    record.outcome = 'failed';
    const summary = { name: error?.errorName ?? error?.name ?? 'Error', message: error?.rpcMessage ?? error?.message ?? String(error) };
    if (error instanceof DownloadError) {
      summary.code = error.code;
      if (error.attempts != null) summary.attempts = error.attempts;
      if (typeof error.data?.limit === 'string') summary.limit = error.data.limit;
    } else if (typeof error?.code === 'number') {
      summary.code = error.code;
    }
    record.error = summary;
  }
  if (ms != null) record.ms = ms;
  return record;
}

/** The records of a manifest file (lines that do not parse, as one cut by a kill, are left out). */
export function readManifest(path) {
  const records = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    try {
      const value = JSON.parse(line);
      if (value && typeof value === 'object' && typeof value.url === 'string') records.push(value);
    } catch {
      // a cut line
    }
  }
  return records;
}

/**
 * Where a bulk job's records go. `resume`: the done records of the file there (ok or skipped,
 * the file still there) carry over and say what not to fetch; otherwise it starts empty.
 */
export class ManifestFile {
  #fd;

  constructor(path, resume) {
    this.path = resolve(String(path));
    this.done = new Map();
    if (resume && existsSync(this.path)) {
      for (const record of readManifest(this.path)) {
        const key = manifestKey(record.url, record.name);
        const kept = (this.done.get(key) ?? []).filter((other) => other.index !== record.index);
        const ok = (record.outcome === 'ok' || record.outcome === 'skipped') && (record.path == null || existsSync(record.path));
        if (ok) kept.push(record);
        if (kept.length) this.done.set(key, kept);
        else this.done.delete(key);
      }
    }
    mkdirSync(dirname(this.path), { recursive: true });
    // A new file under a name nobody can guess (O_EXCL, no link followed), renamed into place and
    // appended to through the same descriptor: nothing planted at either name is written through.
    const { temp, fd } = exclusiveTemporary(this.path);
    try {
      writeSync(fd, [...this.done.values()].flat().map((r) => JSON.stringify(r) + '\n').join(''));
      renameSync(temp, this.path);
    } catch (error) {
      closeSync(fd);
      try { unlinkSync(temp); } catch { /* gone already */ }
      throw error;
    }
    this.#fd = fd;
  }

  /** The done record of an input line: its index's, or (the list changed) another of its URL, recorded again under this index. */
  take(url, name, index) {
    const records = this.done.get(manifestKey(url, name));
    if (!records?.length) return null;
    const same = records.find((r) => r.index === index);
    if (same) return same;
    const moved = { ...records[0], index };
    records.push(moved);
    this.add(moved);
    return moved;
  }

  add(record) {
    if (this.#fd != null) writeSync(this.#fd, JSON.stringify(record) + '\n');
  }

  close() {
    if (this.#fd != null) closeSync(this.#fd);
    this.#fd = null;
  }
}

/** A new file beside `path`, `PATH.tmp-RANDOM`, made exclusively and open for appending: `{ temp, fd }`. */
function exclusiveTemporary(path) {
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_APPEND | (constants.O_NOFOLLOW ?? 0);
  for (let i = 0; i < 16; i++) {
    const temp = `${path}.tmp-${randomBytes(8).toString('hex')}`;
    try {
      return { temp, fd: openSync(temp, flags, 0o644) };
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
    }
  }
  throw new Error(`cannot make a temporary file beside ${path}`);
}
