// The preview example in headless Chromium, against a throttled loopback server: the page must
// show a partial image (decoded by the browser) before the final one, progress, an error, and
// cancel a download when the page goes away. Driven over the DevTools protocol (WebSocket).
//   node --experimental-websocket --test clients/examples/preview/test/   (Node 22+: no flag)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { binaryPath, startServer } from '../../../node/test/loopback.js';
import { startPreview } from '../server.mjs';

const CHROMIUM = ['chromium', 'chromium-browser', 'google-chrome'].find((name) => !spawnSync(name, ['--version']).error);

/** A headless Chromium on about:blank and a DevTools session on its page. */
async function launchBrowser(profile) {
  const child = spawn(CHROMIUM, [
    '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--no-default-browser-check',
    '--disable-extensions', '--remote-debugging-port=0', `--user-data-dir=${profile}`, '--window-size=1000,800', 'about:blank',
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  const endpoint = await new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`chromium did not start:\n${text}`)), 30000);
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => {
      text += chunk;
      const found = text.match(/DevTools listening on (ws:\/\/\S+)/);
      if (found) {
        clearTimeout(timer);
        resolve(found[1]);
      }
    });
    child.on('exit', () => reject(new Error(`chromium exited:\n${text}`)));
  });
  const port = new URL(endpoint).port;
  const targets = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
  const page = targets.find((t) => t.type === 'page');
  const socket = new WebSocket(page.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    socket.onopen = resolve;
    socket.onerror = reject;
  });
  let nextId = 0;
  const pending = new Map();
  socket.onmessage = (message) => {
    const reply = JSON.parse(message.data);
    const waiter = pending.get(reply.id);
    if (!waiter) return;
    pending.delete(reply.id);
    if (reply.error) waiter.reject(new Error(`${reply.error.message}`));
    else waiter.resolve(reply.result);
  };
  const send = (method, params = {}) => new Promise((resolve, reject) => {
    const id = ++nextId;
    pending.set(id, { resolve, reject });
    socket.send(JSON.stringify({ id, method, params }));
  });
  return {
    send,
    /** The value of a page expression (JSON-serialisable). */
    async evaluate(expression) {
      const { result, exceptionDetails } = await send('Runtime.evaluate', { expression, returnByValue: true });
      if (exceptionDetails) throw new Error(exceptionDetails.text);
      return result.value;
    },
    /** Resolves once the browser is gone (its profile can be removed then). */
    close() {
      socket.close();
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      return exited;
    },
  };
}

// What the test reads of the page: each card's state, and its image as the browser has it.
const READ_CARDS = `[...document.querySelectorAll('figure')].map((card) => {
  const img = card.querySelector('img');
  return {
    url: card.dataset.url, state: card.dataset.state, partials: Number(card.dataset.partials),
    received: Number(card.dataset.received ?? 0), status: card.querySelector('.status').textContent,
    kind: img.dataset.kind ?? null, decodedWidth: img.complete && img.getAttribute('src') ? img.naturalWidth : 0,
  };
})`;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

test('the preview shows partial images sharpening, then the final image, progress and errors', {
  skip: typeof WebSocket === 'undefined' ? 'needs WebSocket: Node 22+, or node --experimental-websocket' : false,
}, async () => {
  assert.ok(CHROMIUM, 'no chromium: scripts/system-packages.sh test installs it (Debian: chromium)');
  const origin = await startServer();
  const preview = await startPreview({ binary: binaryPath(), previewSize: 64, partialIntervalMs: 0 });
  const profile = mkdtempSync(join(tmpdir(), 'iw-preview-'));
  const browser = await launchBrowser(profile);
  try {
    const urls = {
      jpeg: origin.url('/files/testimgp.jpg?chunk=400&delayMs=150'), // progressive: a partial image per scan
      png: origin.url('/files/basi6a08.png?chunk=40&delayMs=150'), // Adam7: a partial image per pass
      missing: origin.url('/status/404'),
      hanging: origin.url('/hang'),
    };
    const page = `${preview.url}?${Object.values(urls).map((u) => `url=${encodeURIComponent(u)}`).join('&')}`;
    await browser.send('Page.navigate', { url: page });

    // Poll the DOM until every card but the hanging one has settled; keep every snapshot.
    const history = [];
    let screenshot = null;
    for (const until = Date.now() + 30000; Date.now() < until; await sleep(20)) {
      const cards = await browser.evaluate(READ_CARDS).catch(() => []);
      if (cards.length === 0) continue;
      history.push(cards);
      const jpeg = cards.find((c) => c.url === urls.jpeg);
      if (!screenshot && jpeg?.state === 'partial' && jpeg.decodedWidth > 0) {
        screenshot = Buffer.from((await browser.send('Page.captureScreenshot', { format: 'png' })).data, 'base64');
      }
      if (cards.filter((c) => c.url !== urls.hanging).every((c) => c.state === 'done' || c.state === 'error')) break;
    }
    const timeline = (url) => history.map((cards) => cards.find((c) => c.url === url)).filter(Boolean);

    for (const name of ['jpeg', 'png']) {
      const seen = timeline(urls[name]);
      const firstPartial = seen.findIndex((c) => c.state === 'partial' && c.kind === 'partial' && c.decodedWidth > 0);
      const firstDone = seen.findIndex((c) => c.state === 'done' && c.kind === 'final' && c.decodedWidth > 0);
      assert.ok(firstPartial >= 0, `${name}: a partial image was shown (${JSON.stringify(seen.at(-1))})`);
      assert.ok(firstDone > firstPartial, `${name}: the final image came after it`);
      assert.ok(seen.slice(0, firstDone).some((c) => c.received > 0 && c.state !== 'done'), `${name}: progress before the end`);
      assert.ok(seen[firstDone].partials >= 1);
    }
    // The final JPEG is full size, its partial images at most 64 pixels wide.
    const jpegSeen = timeline(urls.jpeg);
    assert.equal(jpegSeen.at(-1).decodedWidth, 227);
    assert.ok(jpegSeen.filter((c) => c.kind === 'partial' && c.decodedWidth > 0).every((c) => c.decodedWidth <= 64));
    const missing = timeline(urls.missing).at(-1);
    assert.equal(missing.state, 'error');
    assert.match(missing.status, /InvalidDownloadStatusCode/);
    assert.equal(timeline(urls.hanging).at(-1).state, 'loading');

    assert.ok(screenshot && screenshot.subarray(1, 4).toString() === 'PNG', 'a screenshot of a partial image');
    if (process.env.PREVIEW_SCREENSHOT) writeFileSync(process.env.PREVIEW_SCREENSHOT, screenshot);

    // Leaving the page closes its streams: the hanging download is cancelled.
    assert.equal((await preview.worker.status()).liveTokens.length, 1);
    await browser.send('Page.navigate', { url: 'about:blank' });
    let live = 1;
    for (const until = Date.now() + 10000; live > 0 && Date.now() < until; await sleep(50)) {
      live = (await preview.worker.status()).liveTokens.length;
    }
    assert.equal(live, 0, 'the download of a closed preview was cancelled');
  } finally {
    await browser.close();
    await preview.close();
    await origin.close();
    rmSync(profile, { recursive: true, force: true, maxRetries: 5 });
  }
});
