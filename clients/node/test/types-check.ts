// Compiled by test/types.test.js with tsc (when installed): the declarations must describe the
// way the README uses the client.
import { Cancelled, DownloadError, spawnWorker, type DownloadEvent, type ImageResult } from '../index.js';

async function main(): Promise<void> {
  const worker = await spawnWorker({ args: ['--log-level', 'info'] });
  const handle = worker.download('https://example.org/a.jpg', { dir: '/tmp/images', format: 'png', progressive: true });
  handle.on('partialImage', (event) => console.log(event.sequence, event.filledRows, event.path));
  for await (const event of handle) {
    const e: DownloadEvent = event;
    if (e.type === 'progress') console.log(e.receivedBytes, e.expectedBytes ?? '?');
    if (e.type === 'completed' && e.error) console.log(e.error.errorName);
  }
  try {
    const image: ImageResult = await handle.done;
    console.log(image.width, image.height, image.path);
  } catch (error) {
    if (error instanceof Cancelled) console.log('cancelled');
    else if (error instanceof DownloadError) console.log(error.code, error.data);
  }
  await handle.setPriority('high');
  const status: number | null = await worker.close({ cancelPending: true });
  console.log(status);
}

void main();
