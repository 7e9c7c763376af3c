// A loopback HTTP server for the tests: the repository's samples/ at /files/NAME
// (?chunk=N&delayMs=M trickles them; cc, expires, vary, etag and lm add caching headers, and a
// matching conditional request gets a 304; ranges=1|ignore|bad and drops=K&seed=S as the Swift
// server: Accept-Ranges, 206s, the first K answers cut), /status/CODE, /redirect/N/NAME (N redirects, then
// /files/NAME), /hang, /truncate/NAME, /text.
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const SAMPLES = join(REPO, 'samples');

export function binaryPath() {
  if (process.env.IMAGE_WORKER_BIN) return process.env.IMAGE_WORKER_BIN;
  for (const build of ['debug', 'release']) {
    const candidate = join(REPO, '.build', build, 'image-worker');
    try {
      readFileSync(candidate, { flag: 'r' }).length;
      return candidate;
    } catch {}
  }
  throw new Error(`no image-worker binary: run \`swift build\` in ${REPO} or set $IMAGE_WORKER_BIN`);
}

const TYPES = { jpg: 'image/jpeg', png: 'image/png', gif: 'image/gif', webp: 'image/webp', avif: 'image/avif' };

/** The caching (and X-Robots-Tag) headers a /files query asks for, as the Swift test server sends them. */
function cachingHeaders(body, query) {
  const headers = {};
  for (const [key, name] of [['cc', 'Cache-Control'], ['expires', 'Expires'], ['vary', 'Vary']]) {
    if (query.has(key)) headers[name] = query.get(key);
  }
  if (query.has('etag')) headers.ETag = `"${createHash('sha1').update(body).digest('hex').slice(0, 16)}"`;
  if (query.has('lm')) headers['Last-Modified'] = new Date((Math.floor(Date.now() / 86_400_000) - 1) * 86_400_000).toUTCString();
  if (query.has('robots')) headers['X-Robots-Tag'] = query.get('robots').split('|');
  return headers;
}

export async function startServer() {
  const files = new Map(readdirSync(SAMPLES).filter((n) => /\.(jpg|png|gif|webp|avif)$/.test(n)).map((n) => [n, readFileSync(join(SAMPLES, n))]));
  const hanging = new Set();
  const hits = new Map();
  const drops = new Map();
  const server = createServer(async (req, res) => {
    const url = new URL(req.url, 'http://x');
    hits.set(url.pathname, (hits.get(url.pathname) ?? 0) + 1);
    const parts = url.pathname.split('/').filter(Boolean);
    const plain = (status, body) => {
      res.writeHead(status, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(body) });
      res.end(body);
    };
    if (parts[0] === 'files' && files.has(parts[1]) && url.searchParams.has('ranges')) {
      const body = files.get(parts[1]);
      const mode = url.searchParams.get('ranges');
      const etag = `"r${createHash('sha1').update(body).digest('hex').slice(0, 16)}"`;
      const asked = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
      let start = 0;
      if (mode !== 'ignore' && asked && Number(asked[1]) < body.length && (req.headers['if-range'] ?? etag) === etag) {
        start = mode === 'bad' ? Math.max(0, Number(asked[1]) - 1) : Number(asked[1]);
      }
      const partial = start > 0 || (mode === 'bad' && Boolean(req.headers.range));
      const headers = { 'Accept-Ranges': 'bytes', ETag: etag, 'Content-Length': body.length - start };
      if (partial) headers['Content-Range'] = `bytes ${start}-${body.length - 1}/${body.length}`;
      res.writeHead(partial ? 206 : 200, headers);
      const count = (drops.get(req.url) ?? 0) + 1;
      drops.set(req.url, count);
      if (count <= Number(url.searchParams.get('drops') ?? 0) && body.length - start > 1) {
        let state = BigInt(Number(url.searchParams.get('seed') ?? 1) * 1_000_003 + count);
        state = (state * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
        const cut = start + 1 + Number(state % BigInt(body.length - start - 1));
        res.write(body.subarray(start, cut));
        return setTimeout(() => res.socket?.destroy(), 10);
      }
      return res.end(body.subarray(start));
    }
    if (parts[0] === 'files' && files.has(parts[1])) {
      const body = files.get(parts[1]);
      const caching = cachingHeaders(body, url.searchParams);
      const etag = caching.ETag;
      const modified = caching['Last-Modified'];
      if ((etag && req.headers['if-none-match'] === etag)
        || (modified && !req.headers['if-none-match'] && req.headers['if-modified-since'] === modified)) {
        res.writeHead(304, { ...caching, 'Content-Length': 0 });
        return res.end();
      }
      res.writeHead(200, {
        'Content-Type': TYPES[parts[1].split('.').pop()] ?? 'application/octet-stream', 'Content-Length': body.length, ...caching,
      });
      const chunk = Number(url.searchParams.get('chunk') ?? 0);
      const delay = Number(url.searchParams.get('delayMs') ?? 0);
      if (!chunk) return res.end(body);
      for (let start = 0; start < body.length; start += chunk) {
        if (res.destroyed) return;
        res.write(body.subarray(start, start + chunk));
        await new Promise((r) => setTimeout(r, delay));
      }
      return res.end();
    }
    if (parts[0] === 'redirect' && parts.length === 3) {
      const n = Number(parts[1]);
      res.writeHead(302, { Location: n <= 1 ? `/files/${parts[2]}` : `/redirect/${n - 1}/${parts[2]}`, 'Content-Length': 0 });
      return res.end();
    }
    if (parts[0] === 'status') return plain(Number(parts[1]), `status ${parts[1]}`);
    if (parts[0] === 'text') return plain(200, 'this is not an image');
    if (parts[0] === 'hang') {
      hanging.add(res);
      return;
    }
    if (parts[0] === 'truncate' && files.has(parts[1])) {
      const body = files.get(parts[1]);
      res.writeHead(200, { 'Content-Length': body.length });
      res.write(body.subarray(0, body.length >> 1));
      return setTimeout(() => res.destroy(), 20);
    }
    plain(404, 'not found');
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${server.address().port}`;
  return {
    base,
    port: server.address().port,
    files,
    /** Requests so far by path (without the query). */
    hits: (path) => hits.get(path) ?? 0,
    url: (path) => base + path,
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** Runs `body(server, dir)` with a loopback server and a fresh folder (named from `prefix`), both
 * gone afterwards, whatever `body` did. */
export async function withSetup(body, prefix = 'iw-node-') {
  const server = await startServer();
  const dir = mkdtempSync(join(tmpdir(), prefix));
  try {
    await body(server, dir);
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A forward proxy on loopback: CONNECT tunnels, and plain requests in absolute form passed on to
 * their host; it resolves `images.test` to 127.0.0.1 itself, so a URL naming it is fetched through
 * the proxy or not at all. With `credentials` ('user:pass') it answers 407 to a request without them.
 */
export async function startConnectProxy(credentials) {
  const net = await import('node:net');
  const tunnels = [];
  const forwarded = [];
  const expected = credentials ? `Basic ${Buffer.from(credentials).toString('base64')}` : null;
  const server = net.createServer((client) => {
    let head = Buffer.alloc(0);
    const onData = (chunk) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      client.off('data', onData);
      const lines = head.subarray(0, end).toString('latin1').split('\r\n');
      const [method, target] = lines[0].split(' ');
      const auth = lines.slice(1).find((l) => l.toLowerCase().startsWith('proxy-authorization:'))?.split(':').slice(1).join(':').trim();
      const plain = method !== 'CONNECT' && target.startsWith('http://');
      if ((method !== 'CONNECT' && !plain) || (expected && auth !== expected)) {
        client.end('HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n');
        return;
      }
      let host;
      let port;
      if (plain) {
        // Passed on as it came (origin servers accept the absolute form), then relayed.
        const url = new URL(target);
        [host, port] = [url.hostname, Number(url.port || 80)];
      } else {
        const colon = target.lastIndexOf(':');
        [host, port] = [target.slice(0, colon), Number(target.slice(colon + 1))];
      }
      const upstream = net.connect(port, host === 'images.test' ? '127.0.0.1' : host, () => {
        if (plain) {
          forwarded.push(target);
          upstream.write(head);
        } else {
          tunnels.push(target);
          client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
          const rest = head.subarray(end + 4);
          if (rest.length) upstream.write(rest);
        }
        client.pipe(upstream).pipe(client);
      });
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
    };
    client.on('data', onData);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: server.address().port, tunnels, forwarded, close: () => new Promise((resolve) => server.close(resolve)) };
}
