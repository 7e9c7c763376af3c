#!/usr/bin/env node
// An editor-style image preview: a page that shows images appearing as they download, partial
// images sharpening, progress and errors, the way an editor's image hover or markdown preview
// would, driven by one image-worker through the Node client.
//
//   node clients/examples/preview/server.mjs [--port 8080] [URL ...]
//
// then open the address it prints (the URLs given, or ?url=…&url=… in the page's address, or
// paste them in the page). Each image is one Server-Sent Events stream from /preview?url=U:
//   started {url}            progress {received, expected}
//   partial {sequence, passes, filledRows, width, height, src}   (src: a PNG data URL)
//   done {src, width, height, finalUrl, sourceFormat}           failed {name, message}
// Closing a stream (the page navigates away) cancels its download, as closing a hover would.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, join, resolve as resolvePath } from 'node:path';
import { fileURLToPath } from 'node:url';

import { spawnWorker } from '../../node/index.js';

const PAGE = readFileSync(join(dirname(fileURLToPath(import.meta.url)), 'index.html'));

/**
 * Starts the preview: one worker, one HTTP server on 127.0.0.1. Resolves to
 * `{ url, worker, close() }`. Options: `port` (0: any free one), `binary` (else the client's
 * search), `previewSize` (longest side of partial images, default 512), `imageSize` (of the
 * final image, default 2048), `partialIntervalMs` (default 100).
 */
export async function startPreview({ port = 0, binary, previewSize = 512, imageSize = 2048, partialIntervalMs = 100 } = {}) {
  const worker = await spawnWorker({ binary });
  const streams = new Set();

  const server = createServer((req, res) => {
    const address = new URL(req.url, 'http://localhost');
    if (req.method === 'GET' && address.pathname === '/') {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' });
      return res.end(PAGE);
    }
    if (req.method === 'GET' && address.pathname === '/preview' && address.searchParams.get('url')) {
      return preview(address.searchParams.get('url'), req, res);
    }
    res.writeHead(404, { 'Content-Type': 'text/plain' });
    res.end('not found');
  });

  function preview(url, req, res) {
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store', Connection: 'keep-alive' });
    streams.add(res);
    const send = (event, data) => res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    const dataURL = (bytes) => `data:image/png;base64,${Buffer.from(bytes).toString('base64')}`;
    let handle;
    try {
      handle = worker.download(url, {
        inline: true, format: 'png', progressive: true, applyOrientation: true,
        maxPixelSize: imageSize, partialMaxPixelSize: previewSize, partialIntervalMs,
      });
    } catch (error) {
      send('failed', { name: error.name, message: error.message });
      return res.end();
    }
    handle.on('started', (e) => send('started', { url: e.url }));
    handle.on('progress', (e) => send('progress', { received: e.receivedBytes, expected: e.expectedBytes }));
    handle.on('partialImage', (e) => send('partial', {
      sequence: e.sequence, passes: e.passes, filledRows: e.filledRows, width: e.width, height: e.height, src: dataURL(e.data),
    }));
    handle.done.then(
      (image) => send('done', {
        src: dataURL(image.data), width: image.width, height: image.height, finalUrl: image.finalUrl,
        sourceFormat: image.sourceFormat ?? null,
      }),
      (error) => send('failed', { name: error.errorName ?? error.name, message: error.rpcMessage ?? error.message }),
    ).finally(() => {
      streams.delete(res);
      res.end();
    });
    // The page went away before the image was done: stop downloading it.
    req.on('close', () => {
      if (!handle.isDone) handle.cancel().catch(() => {});
    });
  }

  await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/`,
    worker,
    async close() {
      for (const res of streams) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await worker.close({ cancelPending: true });
    },
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolvePath(process.argv[1])) {
  const args = process.argv.slice(2);
  const portAt = args.indexOf('--port');
  const port = portAt >= 0 ? Number(args.splice(portAt, 2)[1]) : 8080;
  const preview = await startPreview({ port });
  const query = args.map((u) => `url=${encodeURIComponent(u)}`).join('&');
  console.log(`preview at ${preview.url}${query ? `?${query}` : ''}  (Ctrl-C to stop)`);
  process.on('SIGINT', () => preview.close().then(() => process.exit(0)));
}
