// The `download` request's params from the client's options.

export const PROTOCOL_VERSION = '1';
export const PRIORITIES = ['veryLow', 'low', 'normal', 'high', 'veryHigh'];
export const FORMATS = ['original', 'png', 'rgba', 'rgb', 'gray'];

/** The `download` params for `url` and the client's options (see README.md). */
export function downloadParams(url, token, options = {}) {
  const {
    dir, path, inline = false, format, progressive = false, priority, headers, timeoutMs, deadlineMs, maxRetries, retryDelayMs,
    credentials,
    allowInvalidCertificates, handleCookies, retryFailed, maxPixelSize, maxPixelCount, applyOrientation, overwrite,
    partialIntervalMs, partialMaxPixelSize,
  } = options;
  const known = new Set(['dir', 'path', 'inline', 'format', 'progressive', 'priority', 'headers', 'timeoutMs',
    'deadlineMs', 'maxRetries', 'retryDelayMs',
    'credentials', 'allowInvalidCertificates', 'handleCookies', 'retryFailed', 'maxPixelSize', 'maxPixelCount',
    'applyOrientation', 'overwrite', 'partialIntervalMs', 'partialMaxPixelSize', 'token', 'signal']);
  for (const key of Object.keys(options)) {
    if (!known.has(key)) throw new TypeError(`unknown download option ${JSON.stringify(key)}`);
  }
  if (dir != null && path != null) throw new TypeError('give dir or path, not both');
  if (inline && (dir != null || path != null)) throw new TypeError('inline delivers the bytes in the event: no dir or path with it');
  if (priority != null && !PRIORITIES.includes(priority)) throw new TypeError(`priority must be one of ${PRIORITIES.join(', ')}`);
  const chosenFormat = format ?? (progressive ? 'png' : undefined);
  if (chosenFormat != null && !FORMATS.includes(chosenFormat)) throw new TypeError(`format must be one of ${FORMATS.join(', ')}`);
  const output = {};
  if (dir != null) Object.assign(output, { delivery: 'file', dir: String(dir) });
  else if (path != null) Object.assign(output, { delivery: 'file', path: String(path) });
  else if (inline) output.delivery = 'inline';
  for (const [key, value] of Object.entries({
    format: chosenFormat, overwrite, maxPixelSize, maxPixelCount, applyOrientation, partialIntervalMs, partialMaxPixelSize,
  })) {
    if (value != null) output[key] = value;
  }
  const params = { url, token };
  for (const [key, value] of Object.entries({
    priority, headers, timeoutMs, deadlineMs, maxRetries, retryDelayMs, allowInvalidCertificates, handleCookies, retryFailed,
  })) {
    if (value != null) params[key] = value;
  }
  if (credentials != null) params.credentials = { user: credentials.user, password: credentials.password };
  if (progressive) params.progressive = true;
  if (Object.keys(output).length) params.output = output;
  return params;
}
