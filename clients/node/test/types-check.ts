// Compiled by test/types.test.js with tsc --strict (test/tsconfig.json: ES2022 library only, no
// @types/node): the declarations must describe the way the README uses the client, and catch
// the mistakes a typed client should.
import {
  Cancelled, DownloadError, downloadDataset, downloadMany, fillIndex, readManifest, spawnWorker, type Configuration, type DownloadEvent,
  type ImageResult, type ManifestRecord, type Settings,
} from '../index.js';

declare const console: { log(...args: unknown[]): void };

async function main(): Promise<void> {
  const worker = await spawnWorker({ args: ['--log-level', 'info'], env: { PATH: '/usr/bin' } });
  const controller: { signal: { aborted: boolean; addEventListener(type: 'abort', listener: () => void): void } } = {
    signal: { aborted: false, addEventListener() {} },
  };
  const handle = worker.download('https://example.org/a.jpg', {
    dir: '/tmp/images', format: 'png', progressive: true, priority: 'high', signal: controller.signal,
  });
  handle.on('partialImage', (event) => console.log(event.sequence, event.filledRows, event.path));
  handle.once('completed', (event) => console.log(event.outcome, event.image?.finalUrl));
  // @ts-expect-error: no such event
  handle.on('finished', () => {});
  for await (const event of handle) {
    const e: DownloadEvent = event;
    if (e.type === 'progress') console.log(e.receivedBytes, e.expectedBytes ?? '?');
    if (e.type === 'response') console.log(e.url, e.finalUrl, e.httpVersion);
    if (e.type === 'completed' && e.error) console.log(e.error.errorName);
  }
  try {
    const image: ImageResult = await handle.done;
    console.log(image.width, image.height, image.path, image.url, image.finalUrl, image.data?.byteLength);
  } catch (error) {
    if (error instanceof Cancelled) console.log('cancelled');
    else if (error instanceof DownloadError) console.log(error.code, error.data);
  }
  await handle.setPriority('high');
  // @ts-expect-error: not a priority
  await handle.setPriority('urgent');
  // @ts-expect-error: a typo in an option
  worker.download('https://example.org/b.jpg', { maxPixelSise: 256 });

  const settings: Settings = { maxConcurrentDownloads: 8, executionOrder: 'lifo', headers: { Accept: 'image/*' } };
  const configuration: Configuration = await worker.configure(settings);
  const order: 'fifo' | 'lifo' = configuration.executionOrder;
  const limit: number = configuration.maxConcurrentDownloads;
  console.log(order, limit);
  // @ts-expect-error: a typo in a setting
  await worker.configure({ maxConcurentDownloads: 8 });
  // @ts-expect-error: not an execution order
  await worker.configure({ executionOrder: 'random' });

  for await (const outcome of worker.downloadMany(['https://example.org/a.jpg', { url: 'https://example.org/b.jpg', name: 'b.jpg' }], {
    dir: 'images', nameTemplate: 'p{index:5}.{ext}', manifest: 'job.jsonl', resume: true, concurrency: 4, signal: controller.signal,
  })) {
    const index: number = outcome.index;
    // `ok` narrows: no null left to check on either side.
    if (outcome.ok) console.log(index, outcome.image.path, outcome.image.sha256, outcome.skipped);
    else console.log(outcome.error.message);
    console.log(outcome.ok ? outcome.image.path : outcome.error.message);
    // @ts-expect-error: without checking ok, the image may be null
    console.log(outcome.image.path);
    // @ts-expect-error: a failure has no image
    if (!outcome.ok) console.log(outcome.image.path);
  }
  for await (const outcome of downloadMany(['https://example.org/a.jpg'], { binary: '/usr/bin/image-worker', dir: 'x' })) {
    console.log(outcome.url);
  }
  const records: ManifestRecord[] = readManifest('job.jsonl');
  console.log(records[0]?.outcome, fillIndex('{index}', 1));
  // @ts-expect-error: a typo in a bulk option
  worker.downloadMany([], { concurency: 4 });
  const dataset = await downloadDataset('rows.csv', 'shards', {
    captionCol: 'caption', saveColumns: ['license'], width: 256, height: 256, fit: 'cover', format: 'jpeg', disallowedHeaderDirectives: [],
  });
  console.log(dataset.successes, dataset.status['opted_out'], dataset.shards[0]);
  await downloadDataset('rows.parquet', 'shards', { inputFormat: 'parquet', outputFormat: 'parquet' });
  // @ts-expect-error: not an input format
  await downloadDataset('rows.xlsx', 'shards', { inputFormat: 'xlsx' });

  // `await using worker = …` (TypeScript 5.2+) calls this at the end of the block.
  const disposable: { [Symbol.asyncDispose](): Promise<void> } = worker;
  await disposable[Symbol.asyncDispose]();
  worker.on('exit', (code, signal) => console.log(code, signal));
  const status: number | null = await worker.close({ cancelPending: true });
  console.log(status);
}

void main();
