import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import {
  BadImageData, Cancelled, Filtered, OptedOut, InvalidDownloadStatusCode, InvalidURL, NetworkError, PROTOCOL_VERSION, RequestError,
  UnsupportedFormat, WorkerClosed, WorkerExited, readImageBytes, spawnWorker,
} from '../index.js';
import { REPO, SAMPLES, binaryPath, startConnectProxy, withSetup } from './loopback.js';

const binary = binaryPath();

test('a download: async iterator of typed events, emitter, then the image', () => withSetup(async (server, dir) => {
  const worker = await spawnWorker({ binary });
  assert.equal(worker.binarySource, 'argument');
  assert.equal(worker.info.protocolVersion, PROTOCOL_VERSION);
  const handle = worker.download(server.url('/files/testorig.jpg?chunk=2000&delayMs=5'), { dir });
  const emitted = [];
  handle.on('progress', (e) => emitted.push(e.receivedBytes));
  const types = [];
  for await (const event of handle) types.push(event.type);
  const image = await handle.done;
  assert.equal(types[0], 'started');
  assert.equal(types[1], 'response');
  assert.equal(types.at(-1), 'completed');
  assert.ok(types.slice(2, -1).every((t) => t === 'progress'));
  assert.equal(emitted.at(-1), 5770);
  assert.equal(image.path, join(dir, 'testorig.jpg'));
  assert.equal(image.sourceFormat, 'jpeg');
  assert.deepEqual(await readImageBytes(image), readFileSync(join(SAMPLES, 'testorig.jpg')));
  assert.equal(await handle.cancel(), false);
  assert.equal(await worker.close(), 0);
}));

test('WebP, GIF and AVIF in; JPEG and WebP out; animations counted', () => withSetup(async (server, dir) => {
  const worker = await spawnWorker({ binary });
  for (const format of ['webp', 'gif', 'avif']) assert.ok(worker.info.capabilities.decodes.includes(format));
  const jpeg = await worker.download(server.url('/files/test.webp'), { inline: true, format: 'jpeg', quality: 70 }).done;
  assert.equal(jpeg.mimeType, 'image/jpeg');
  assert.deepEqual([...jpeg.data.subarray(0, 3)], [0xff, 0xd8, 0xff]);
  assert.equal(jpeg.sourceFormat, 'webp');
  const webp = await worker.download(server.url('/files/extended_pixi.avif'), { dir, format: 'webp', lossless: true }).done;
  assert.equal(webp.path, join(dir, 'extended_pixi.webp'));
  assert.equal(readFileSync(webp.path).subarray(8, 12).toString(), 'WEBP');
  const gif = await worker.download(server.url('/files/beacon.gif'), { format: 'rgba' }).done;
  assert.equal(gif.animated, true);
  assert.equal(gif.frameCount, 2);
  assert.equal(gif.loopCount, 0);
  assert.throws(() => worker.download(server.url('/files/test.webp'), { format: 'png', quality: 50 }), /quality goes with/);
  await worker.configure({ maxFrames: 1 });
  await assert.rejects(worker.download(server.url('/files/beacon.gif'), { format: 'png' }).done,
    (e) => e.name === 'LimitExceeded' && e.data.limit === 'frames' && e.data.maximum === 1);
  assert.equal(await worker.close(), 0);
}));

test('size filters refuse from the header with Filtered, naming the filter', () => withSetup(async (server) => {
  const worker = await spawnWorker({ binary });
  await assert.rejects(worker.download(server.url('/files/basn2c08.png'), { format: 'rgba', minImageSize: 33 }).done,
    (e) => e instanceof Filtered && e.code === 1011 && e.filter === 'minImageSize' && e.data.width === 32);
  await assert.rejects(worker.download(server.url('/files/testorig.jpg'), { maxAspectRatio: 1.5 }).done,
    (e) => e instanceof Filtered && e.filter === 'maxAspectRatio');
  const kept = await worker.download(server.url('/files/testorig.jpg'), { format: 'rgba', maxImageArea: 227 * 149 }).done;
  assert.equal(kept.width, 227);
  assert.throws(() => worker.download(server.url('/files/testorig.jpg'), { maxAspectRatio: 0.5 }), /maxAspectRatio/);
  assert.equal(await worker.close(), 0);
}));

test('X-Robots-Tag opt-outs fail with OptedOut once configured', () => withSetup(async (server) => {
  const worker = await spawnWorker({ binary });
  assert.equal((await worker.download(server.url('/files/testorig.jpg?robots=noai')).done).byteLength, 5770);
  const configuration = await worker.configure({ disallowedHeaderDirectives: ['noai', 'noimageai'], userAgentToken: 'mybot' });
  assert.deepEqual(configuration.disallowedHeaderDirectives, ['noai', 'noimageai']);
  await assert.rejects(worker.download(server.url('/files/testorig.jpg?robots=mybot:%20noimageai')).done,
    (e) => e instanceof OptedOut && e.code === 1012 && e.directives.join() === 'noimageai');
  assert.equal((await worker.download(server.url('/files/testorig.jpg?robots=googlebot:%20noai')).done).byteLength, 5770);
  assert.equal(await worker.close(), 0);
}));

test('inline pixels on lines far over 64 KiB', () => withSetup(async (server, dir) => {
  const worker = await spawnWorker({ binary });
  const handles = Array.from({ length: 4 }, () => worker.download(server.url('/files/testorig.jpg'), { inline: true, format: 'rgba' }));
  for (const image of await Promise.all(handles.map((h) => h.done))) {
    assert.equal(image.data.length, 227 * 149 * 4);
    assert.equal(image.pixelFormat, 'rgba');
    assert.equal(image.stride, 227 * 4);
  }
  const onDisk = await worker.download(server.url('/files/testorig.jpg'), { dir, format: 'rgba' }).done;
  assert.deepEqual(readFileSync(onDisk.path), (await handles[0].done).data);
  await worker.close();
}));

test('each error code rejects with its own class', () => withSetup(async (server) => {
  const worker = await spawnWorker({ binary });
  server.files.set('broken.jpg', Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(100)]));
  const notFound = await worker.download(server.url('/status/404')).done.catch((e) => e);
  assert.ok(notFound instanceof InvalidDownloadStatusCode);
  assert.equal(notFound.statusCode, 404);
  assert.equal(notFound.url, server.url('/status/404'));
  // The name once, however it is printed.
  assert.equal(String(notFound), `InvalidDownloadStatusCode: ${notFound.message}`);
  assert.equal(`${notFound.name}: ${notFound.message}`, String(notFound));
  assert.ok(!notFound.message.includes('InvalidDownloadStatusCode') && notFound.stack.startsWith(`${notFound}`));
  assert.ok((await worker.download(server.url('/text'), { format: 'png' }).done.catch((e) => e)) instanceof UnsupportedFormat);
  const truncated = await worker.download(server.url('/truncate/testorig.jpg')).done.catch((e) => e);
  assert.ok(truncated instanceof NetworkError);
  assert.equal(truncated.reason, 'truncated');
  assert.ok((await worker.download(server.url('/files/broken.jpg'), { format: 'png' }).done.catch((e) => e)) instanceof BadImageData);
  assert.ok((await worker.download('not a url').done.catch((e) => e)) instanceof InvalidURL);
  // A name template only the worker reads: its refusal fails the handle.
  const refused = worker.download(server.url('/files/testorig.jpg'), { dir: '/tmp/image-worker-refused', nameTemplate: '{nope}' });
  await assert.rejects(refused.done, (e) => e instanceof RequestError && e.code === -32602);
  await assert.rejects(refused.accepted, RequestError);
  assert.throws(() => worker.download('u', { dir: 'a', path: 'b' }), TypeError);
  assert.throws(() => worker.download('u', { colour: 'red' }), /unknown download option/);
  // The schema's rules between options are checked before sending (lib/option-table.js).
  assert.throws(() => worker.download('u', { progressive: true, format: 'original' }), /progressive needs a decoded format/);
  assert.throws(() => worker.download('u', { dir: 'a', overwrite: true, skipExisting: true }), /exclude each other/);
  // The schema's x-rules between options, as the worker checks them.
  assert.throws(() => worker.download('u', { name: 'a.png' }), /name goes with dir/);
  assert.throws(() => worker.download('u', { path: 'a.png', nameTemplate: '{name}' }), /nameTemplate goes with dir/);
  assert.throws(() => worker.download('u', { dir: 'a', index: 3 }), /index goes with nameTemplate/);
  assert.throws(() => worker.download('u', { skipExisting: true }), /skipExisting goes with dir or path/);
  assert.throws(() => worker.download('u', { overwrite: true }), /overwrite goes with delivery 'file'/);
  assert.throws(() => worker.download('u', { format: 'png', maxPixelSize: 0 }), /maxPixelSize must be an integer in 1…1,000,000/);
  // A box (sharp's resize): its rules, then the sizes each fit gives a 227 × 149 photo.
  assert.throws(() => worker.download('u', { format: 'png', fit: 'cover' }), /fit goes with width or height/);
  assert.throws(() => worker.download('u', { format: 'png', width: 10, maxPixelSize: 20 }), /exclude each other/);
  assert.throws(() => worker.download('u', { format: 'png', width: 10, position: 'middle' }), /position must be one of/);
  for (const [fit, size] of [['cover', [100, 100]], ['contain', [100, 100]], ['fill', [100, 100]], ['inside', [100, 66]], ['outside', [152, 100]]]) {
    const boxed = await worker.download(server.url('/files/testorig.jpg'), { format: 'rgb', width: 100, height: 100, fit, inline: true }).done;
    assert.deepEqual([boxed.width, boxed.height, boxed.data.length], [...size, size[0] * size[1] * 3], fit);
  }
  const padded = await worker.download(server.url('/files/testorig.jpg'), { format: 'rgba', width: 100, height: 100, fit: 'contain', background: '#10203040', inline: true }).done;
  assert.deepEqual([...padded.data.subarray(0, 4)], [0x10, 0x20, 0x30, 0x40]);
  assert.equal((await worker.download(server.url('/files/testorig.jpg')).done).byteLength, 5770);
  await worker.close();
}));

test('a deadline ends a download that never answers; retries per download list every attempt', () => withSetup(async (server) => {
  const worker = await spawnWorker({ binary });
  const started = Date.now();
  const late = await worker.download(server.url('/hang'), { deadlineMs: 300, timeoutMs: 60000, maxRetries: 0 }).done.catch((e) => e);
  assert.ok(late instanceof NetworkError);
  assert.equal(late.reason, 'deadline');
  assert.equal(late.attempts, 1);
  assert.deepEqual(late.earlierAttempts, []);
  assert.ok(Date.now() - started < 20000, 'the deadline, not the 60 s idle timeout');
  const busy = await worker.download(server.url('/status/503'), { maxRetries: 2, retryDelayMs: 1 }).done.catch((e) => e);
  assert.ok(busy instanceof InvalidDownloadStatusCode);
  assert.equal(busy.attempts, 3);
  assert.deepEqual(busy.earlierAttempts.map((e) => e.data.statusCode), [503, 503]);
  const once = await worker.download(server.url('/status/503'), { maxRetries: 0 }).done.catch((e) => e);
  assert.equal(once.attempts, null);
  await worker.close();
}));

test('cancel, setPriority and AbortSignal', () => withSetup(async (server) => {
  const worker = await spawnWorker({ binary });
  const handle = worker.download(server.url('/hang'));
  await handle.accepted;
  assert.equal(await handle.setPriority('veryHigh'), true);
  assert.equal((await worker.status()).liveTokens[0].priority, 'veryHigh');
  assert.equal(await handle.cancel(), true);
  const cancelled = await handle.done.catch((e) => e);
  assert.ok(cancelled instanceof Cancelled);
  // Said once, not "Cancelled: Cancelled: Cancelled (url)".
  assert.equal(`${cancelled.name}: ${cancelled.message}`, `Cancelled: the download was cancelled (${server.url('/hang')})`);
  assert.equal(String(cancelled), `${cancelled.name}: ${cancelled.message}`);
  assert.equal(handle.completed.outcome, 'cancelled');
  assert.equal(await handle.setPriority('low'), false);
  const controller = new AbortController();
  const aborted = worker.download(server.url('/hang'), { signal: controller.signal });
  controller.abort();
  await assert.rejects(aborted.done, Cancelled);
  await worker.close();
}));

test('partial images arrive in order, then the final image', () => withSetup(async (server) => {
  const worker = await spawnWorker({ binary });
  const handle = worker.download(server.url('/files/testimgp.jpg?chunk=400&delayMs=20'), {
    inline: true, progressive: true, partialIntervalMs: 0,
  });
  const partials = [];
  for await (const event of handle) if (event.type === 'partialImage') partials.push(event);
  const image = await handle.done;
  assert.ok(partials.length > 0);
  assert.deepEqual(partials.map((p) => p.sequence), [...partials.map((p) => p.sequence)].sort((a, b) => a - b));
  assert.ok(partials.every((p) => p.width === 227 && p.data.subarray(1, 4).toString() === 'PNG'));
  assert.equal(image.mimeType, 'image/png');
  await worker.close();
}));

test('a crash fails every pending handle with the worker\'s stderr', () => withSetup(async (server) => {
  const worker = await spawnWorker({ binary, args: ['--log-level', 'debug'] });
  const handles = [1, 2, 3].map(() => worker.download(server.url('/hang')));
  await Promise.all(handles.map((h) => h.accepted));
  while (worker.stderrTail.length === 0) await new Promise((r) => setTimeout(r, 20));
  worker.kill('SIGKILL');
  for (const handle of handles) {
    const error = await handle.done.catch((e) => e);
    assert.ok(error instanceof WorkerExited, String(error));
    assert.equal(error.signal, 'SIGKILL');
    assert.match(error.message, /killed by SIGKILL/);
    assert.ok(error.stderr.length > 0 && error.message.includes(error.stderr.at(-1)));
  }
  await assert.rejects(async () => { for await (const _ of handles[0]); }, WorkerExited);
  assert.throws(() => worker.download(server.url('/files/testorig.jpg')), WorkerExited);
  await worker.close();
}));

test('close finishes or cancels, and leaves no process', () => withSetup(async (server) => {
  const worker = await spawnWorker({ binary });
  const handle = worker.download(server.url('/files/testorig.jpg?chunk=1000&delayMs=20'));
  assert.equal(await worker.close(), 0);
  assert.equal((await handle.done).byteLength, 5770);
  assert.throws(() => process.kill(worker.pid, 0));
  assert.throws(() => worker.download(server.url('/files/testorig.jpg')), WorkerClosed);

  const second = await spawnWorker({ binary });
  const hanging = second.download(server.url('/hang'));
  await hanging.accepted;
  assert.equal(await second.close({ cancelPending: true }), 0);
  await assert.rejects(hanging.done, Cancelled);
}));

/** Runs `body` (an ES module's text, given SERVER and BINARY) in its own node process. */
function runScript(body, server) {
  return new Promise((resolve) => {
    const script = `import { spawnWorker } from ${JSON.stringify(join(REPO, 'clients', 'node', 'index.js'))};\n` +
      `const SERVER = ${JSON.stringify(server.url(''))}, BINARY = ${JSON.stringify(binary)};\n${body}`;
    const started = Date.now();
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    const killer = setTimeout(() => child.kill('SIGKILL'), 20000);
    child.on('close', (code, signal) => {
      clearTimeout(killer);
      resolve({ code, signal, out, err, ms: Date.now() - started });
    });
  });
}

async function gone(pid, withinMs) {
  for (const until = Date.now() + withinMs; Date.now() < until; await new Promise((r) => setTimeout(r, 50))) {
    try {
      process.kill(pid, 0);
    } catch {
      return true;
    }
  }
  return false;
}

test('a script that forgets close() still exits, and so does its worker', () => withSetup(async (server) => {
  const run = await runScript(`
    const worker = await spawnWorker({ binary: BINARY });
    const image = await worker.download(SERVER + '/files/testorig.jpg?chunk=1000&delayMs=20').done;
    console.log(JSON.stringify({ pid: worker.pid, bytes: image.byteLength }));
  `, server);
  assert.equal(run.signal, null, `node hung and was killed: ${run.err}`);
  assert.equal(run.code, 0, run.err);
  const { pid, bytes } = JSON.parse(run.out);
  assert.equal(bytes, 5770);
  assert.ok(await gone(pid, 5000), 'the worker exits once its parent is gone');
}));

test('a download under way keeps node running until it ends', () => withSetup(async (server) => {
  const run = await runScript(`
    const worker = await spawnWorker({ binary: BINARY });
    const handle = worker.download(SERVER + '/files/testorig.jpg?chunk=500&delayMs=60');
    handle.done.then((image) => console.log(JSON.stringify({ pid: worker.pid, bytes: image.byteLength })));
  `, server);
  assert.equal(run.code, 0, run.err);
  assert.equal(JSON.parse(run.out).bytes, 5770, 'the download finished before node exited');
  assert.ok(run.ms >= 600, `12 chunks 60 ms apart take at least 0.6 s (${run.ms} ms)`);
}));

test('Symbol.asyncDispose closes the worker (await using)', () => withSetup(async (server) => {
  const worker = await spawnWorker({ binary });
  const handle = worker.download(server.url('/files/testorig.jpg?chunk=1000&delayMs=20'));
  await worker[Symbol.asyncDispose]();
  assert.equal((await handle.done).byteLength, 5770, 'downloads under way finish first');
  assert.equal(worker.exitCode, 0);
  assert.throws(() => process.kill(worker.pid, 0));
  assert.throws(() => worker.download(server.url('/files/testorig.jpg')), WorkerClosed);
}));

test('events carry the URL as given and the final URL apart', () => withSetup(async (server) => {
  const worker = await spawnWorker({ binary });
  const given = server.url('/files/testorig.jpg?note=a b#frag');
  const handle = worker.download(given);
  const response = await new Promise((resolve) => handle.once('response', resolve));
  const image = await handle.done;
  assert.equal(response.url, given);
  assert.equal(image.url, given);
  assert.equal(image.finalUrl, server.url('/files/testorig.jpg?note=a%20b'));
  assert.equal(response.finalUrl, image.finalUrl);
  await worker.close();
}));

test('per-host limits and proxies: the environment, configure, no password shown', () => withSetup(async (server) => {
  const proxy = await startConnectProxy('me:s3cret');
  try {
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().endsWith('_proxy')));
    Object.assign(env, { HTTP_PROXY: `http://me:s3cret@127.0.0.1:${proxy.port}`, NO_PROXY: 'example.org' });
    const worker = await spawnWorker({ binary, env });
    const configuration = await worker.configure({ maxConcurrentPerHost: 2, maxRequestsPerSecondPerHost: 50 });
    assert.equal(configuration.maxConcurrentPerHost, 2);
    assert.equal(configuration.maxRequestsPerSecondPerHost, 50);
    assert.equal(configuration.httpProxy, `http://me@127.0.0.1:${proxy.port}`);
    assert.equal(configuration.noProxy, 'example.org');
    const url = `http://images.test:${server.port}/files/testorig.jpg`;
    const image = await worker.download(url).done;
    assert.equal(image.byteLength, 5770);
    assert.deepEqual(proxy.forwarded, [url]);
    assert.deepEqual(proxy.tunnels, []);
    assert.equal((await worker.configure({ proxy: '' })).httpProxy, null);
    await assert.rejects(worker.download(url, { maxRetries: 0 }).done, (e) => e instanceof NetworkError);
    await assert.rejects(worker.configure({ proxy: 'socks5://u:p@127.0.0.1:1080' }), (e) => e instanceof RequestError);
    assert.ok(!worker.stderrTail.join('').includes('s3cret'));
    assert.equal(await worker.close(), 0);
  } finally {
    await proxy.close();
  }
}));

test('the HTTP cache: fromCache, revalidated, cachePolicy, cacheMaxBytes', () => withSetup(async (server, dir) => {
  const worker = await spawnWorker({ binary, args: ['--cache-dir', join(dir, 'cache')] });
  assert.equal(worker.info.capabilities.httpCache, true);
  const url = server.url('/files/testorig.jpg?cc=no-cache&etag=1');
  const first = await worker.download(url).done;
  assert.equal(first.fromCache, false);
  assert.equal(first.metrics.attempts, 1);
  assert.equal(first.metrics.httpVersion, '1.1');
  assert.equal(first.metrics.wireBytes, first.byteLength);
  assert.equal(typeof first.metrics.ttfbMs, 'number');
  const second = await worker.download(url).done;
  assert.equal(second.fromCache, true);
  assert.equal(second.revalidated, true);
  const offline = await worker.download(url, { cachePolicy: 'cacheOnly' }).done;
  assert.equal(offline.fromCache, true);
  assert.equal(offline.revalidated, false);
  await assert.rejects(worker.download(server.url('/files/testimgp.jpg'), { cachePolicy: 'cacheOnly' }).done,
    (e) => e instanceof NetworkError && e.reason === 'notCached' && e.metrics.wireBytes === 0);
  assert.equal((await worker.configure({ cacheMaxBytes: 0 })).cacheMaxBytes, 0);
  assert.throws(() => worker.download(url, { cachePolicy: 'sometimes' }), /cachePolicy must be one of/);
  assert.equal(await worker.close(), 0);
}));

test('the worker\'s warnings reach the user: process.emitWarning once, or the worker\'s warning event', () => withSetup(async (server) => {
  // A proxy setting the worker cannot use: it says so (and goes on without it).
  const run = await runScript(`
    const env = { ...process.env, HTTPS_PROXY: 'socks9://nowhere:1', https_proxy: 'socks9://nowhere:1' };
    const quiet = await spawnWorker({ binary: BINARY, env });
    await quiet.download(SERVER + '/files/testorig.jpg').done;
    await quiet.close();
    const heard = [];
    const listened = new (await import(${JSON.stringify(join(REPO, 'clients', 'node', 'index.js'))})).Worker({ binary: BINARY, env });
    listened.on('warning', (w) => heard.push(w.code));
    await listened.ready;
    await listened.close();
    await new Promise((resolve) => setImmediate(resolve));
    console.log(JSON.stringify({ warnings: quiet.warnings, heard }));
  `, server);
  assert.equal(run.code, 0, run.err);
  const { warnings, heard } = JSON.parse(run.out);
  assert.deepEqual(warnings.map((w) => w.code), ['proxySkipped']);
  assert.match(warnings[0].message, /socks9/);
  assert.deepEqual(heard, ['proxySkipped'], 'a listener gets it instead');
  const shown = run.err.split('\n').filter((line) => line.includes('ImageWorkerWarning'));
  assert.equal(shown.length, 1, run.err);
  assert.match(shown[0], /\[proxySkipped\] ImageWorkerWarning: image-worker: proxy settings from the environment skipped/);
}));

test('close() with a hung download takes the grace (2 s by default), not the timeout', () => withSetup(async (server) => {
  const worker = await spawnWorker({ binary });
  const hanging = worker.download(server.url('/hang'));
  await hanging.accepted;
  let started = Date.now();
  assert.equal(await worker.close(), 0);
  const took = Date.now() - started;
  assert.ok(took >= 1500 && took < 6000, `closing took ${took} ms`);
  await assert.rejects(hanging.done, Cancelled);

  const second = await spawnWorker({ binary });
  const again = second.download(server.url('/hang'));
  await again.accepted;
  await assert.rejects(second.close({ graceMs: -1 }), RangeError);
  started = Date.now();
  assert.equal(await second.close({ graceMs: 200 }), 0);
  assert.ok(Date.now() - started < 3000);
  await assert.rejects(again.done, Cancelled);
}));

test('verify: \'full\' refuses an original cut short; a thumbnail names the original\'s digest and size', () => withSetup(async (server, dir) => {
  const { createHash } = await import('node:crypto');
  const photo = readFileSync(join(SAMPLES, 'testorig.jpg'));
  server.files.set('cut.jpg', photo.subarray(0, 4000));
  const worker = await spawnWorker({ binary });
  try {
    const kept = await worker.download(server.url('/files/cut.jpg'), { dir: join(dir, 'a'), verify: true }).done;
    assert.ok(kept.path && kept.sourceWidth === 227 && kept.sourceHeight === 149);
    await assert.rejects(worker.download(server.url('/files/cut.jpg'), { dir: join(dir, 'b'), verify: 'full' }).done, BadImageData);
    assert.throws(() => worker.download(server.url('/files/cut.jpg'), { verify: 1 }), /verify must be one of/);
    const thumb = await worker.download(server.url('/files/testorig.jpg'), { dir: join(dir, 't'), format: 'webp', maxPixelSize: 100, sha256: true }).done;
    assert.equal(thumb.sha256, createHash('sha256').update(readFileSync(thumb.path)).digest('hex'));
    assert.equal(thumb.sourceSha256, createHash('sha256').update(photo).digest('hex'));
    assert.deepEqual([thumb.width, thumb.sourceWidth, thumb.sourceHeight, thumb.byteLength], [100, 227, 149, photo.length]);
  } finally {
    await worker.close();
  }
}));

test('every frame of an animation: one Buffer per frame, with delays and loops', () => withSetup(async (server) => {
  const worker = await spawnWorker({ binary });
  try {
    const all = await worker.download(server.url('/files/beacon.gif'), { format: 'rgba', frames: 'all' }).done;
    const first = await worker.download(server.url('/files/beacon.gif?first'), { format: 'rgba' }).done;
    assert.equal(all.frames, 2);
    assert.equal(all.frameCount, 2);
    assert.equal(all.loopCount, 0);
    assert.deepEqual(all.delaysMs, [0, 0]);
    assert.equal(all.frameData.length, 2);
    for (const frame of all.frameData) assert.equal(frame.length, all.stride * all.height);
    assert.ok(all.frameData[0].equals(first.data));
    assert.ok(!all.frameData[1].equals(first.data));
    assert.equal(first.frameData, undefined);
    assert.throws(() => worker.download(server.url('/files/beacon.gif'), { format: 'png', frames: 'all' }),
      /frames 'all' goes with format 'webp' or 'gif' or 'rgba' or 'rgb' or 'gray'/);
  } finally {
    await worker.close();
  }
}));
