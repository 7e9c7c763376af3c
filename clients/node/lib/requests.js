// The `download` request's params from the client's options.

export const PROTOCOL_VERSION = '1';
export const PRIORITIES = ['veryLow', 'low', 'normal', 'high', 'veryHigh'];
export const FORMATS = ['original', 'png', 'jpeg', 'webp', 'rgba', 'rgb', 'gray'];
export const CHROMA_SUBSAMPLINGS = ['4:2:0', '4:2:2', '4:4:4'];
export const CACHE_POLICIES = ['default', 'reload', 'preferCache', 'cacheOnly'];

/** The `download` params for `url` and the client's options (see README.md). */
export function downloadParams(url, token, options = {}) {
  const {
    dir, path, inline = false, format, progressive = false, quiet = false, priority, headers, timeoutMs, deadlineMs, maxRetries, retryDelayMs,
    credentials,
    allowInvalidCertificates, handleCookies, retryFailed, cachePolicy, maxPixelSize, maxPixelCount, applyOrientation, overwrite,
    partialIntervalMs, partialMaxPixelSize, name, nameTemplate, skipExisting, verify, sha256, quality, lossless,
    chromaSubsampling,
  } = options;
  const known = new Set(['dir', 'path', 'inline', 'format', 'progressive', 'quiet', 'priority', 'headers', 'timeoutMs',
    'deadlineMs', 'maxRetries', 'retryDelayMs',
    'credentials', 'allowInvalidCertificates', 'handleCookies', 'retryFailed', 'cachePolicy', 'maxPixelSize', 'maxPixelCount',
    'applyOrientation', 'overwrite', 'partialIntervalMs', 'partialMaxPixelSize', 'name', 'nameTemplate', 'skipExisting',
    'verify', 'sha256', 'quality', 'lossless', 'chromaSubsampling', 'token', 'signal']);
  for (const key of Object.keys(options)) {
    if (!known.has(key)) throw new TypeError(`unknown download option ${JSON.stringify(key)}`);
  }
  if (dir != null && path != null) throw new TypeError('give dir or path, not both');
  if (inline && (dir != null || path != null)) throw new TypeError('inline delivers the bytes in the event: no dir or path with it');
  if ((name != null || nameTemplate != null) && dir == null) throw new TypeError(`${name != null ? 'name' : 'nameTemplate'} goes with dir`);
  if (name != null && nameTemplate != null) throw new TypeError('give name or nameTemplate, not both');
  if (skipExisting && overwrite) throw new TypeError('skipExisting and overwrite exclude each other');
  if (skipExisting && dir == null && path == null) throw new TypeError('skipExisting goes with dir or path');
  if (priority != null && !PRIORITIES.includes(priority)) throw new TypeError(`priority must be one of ${PRIORITIES.join(', ')}`);
  if (cachePolicy != null && !CACHE_POLICIES.includes(cachePolicy)) {
    throw new TypeError(`cachePolicy must be one of ${CACHE_POLICIES.join(', ')}`);
  }
  const chosenFormat = format ?? (progressive ? 'png' : undefined);
  if (chosenFormat != null && !FORMATS.includes(chosenFormat)) throw new TypeError(`format must be one of ${FORMATS.join(', ')}`);
  if (quality != null) {
    if (chosenFormat !== 'jpeg' && chosenFormat !== 'webp') throw new TypeError("quality goes with format 'jpeg' or 'webp'");
    if (!Number.isInteger(quality) || quality < 1 || quality > 100) throw new TypeError('quality must be an integer in 1…100');
  }
  if (lossless && chosenFormat !== 'webp') throw new TypeError("lossless goes with format 'webp'");
  if (chromaSubsampling != null) {
    if (chosenFormat !== 'jpeg') throw new TypeError("chromaSubsampling goes with format 'jpeg'");
    if (!CHROMA_SUBSAMPLINGS.includes(chromaSubsampling)) throw new TypeError(`chromaSubsampling must be one of ${CHROMA_SUBSAMPLINGS.join(', ')}`);
  }
  const output = {};
  if (dir != null) Object.assign(output, { delivery: 'file', dir: String(dir) });
  else if (path != null) Object.assign(output, { delivery: 'file', path: String(path) });
  else if (inline) output.delivery = 'inline';
  // A decoded image with no file asked for: its bytes through shared memory (a Buffer in
  // `image.data`), or inline when small; never base64 of megabytes of pixels.
  else if ((chosenFormat ?? 'original') !== 'original') output.delivery = 'shared';
  for (const [key, value] of Object.entries({
    format: chosenFormat, name, nameTemplate, overwrite, skipExisting, verify, sha256, maxPixelSize, maxPixelCount,
    applyOrientation, partialIntervalMs, partialMaxPixelSize, quality, lossless, chromaSubsampling,
  })) {
    if (value != null) output[key] = value;
  }
  const params = { url, token };
  for (const [key, value] of Object.entries({
    priority, headers, timeoutMs, deadlineMs, maxRetries, retryDelayMs, allowInvalidCertificates, handleCookies, retryFailed,
    cachePolicy,
  })) {
    if (value != null) params[key] = value;
  }
  if (credentials != null) params.credentials = { user: credentials.user, password: credentials.password };
  if (progressive) params.progressive = true;
  if (quiet) {
    if (progressive) throw new TypeError('quiet sends only the terminal event: no partial images (progressive)');
    params.quiet = true;
  }
  if (Object.keys(output).length) params.output = output;
  return params;
}
