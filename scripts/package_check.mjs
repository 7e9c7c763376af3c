// What a Node user does first with the npm packages, run by scripts/package-check.sh against a
// fresh folder that installed only the two tarballs (Swift and the codec libraries hidden): the
// platform package's worker is the one found, it downloads, decodes every format and streams
// partial images, and `npx image-worker` runs it.
//   node scripts/package_check.mjs REPO INSTALL_DIR
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [repo, installDir] = process.argv.slice(2).map((p) => resolve(p));
const fromInstall = createRequire(join(installDir, 'package.json'));
const client = await import(pathToFileURL(fromInstall.resolve('image-worker')).href);
const { startServer } = await import(pathToFileURL(join(repo, 'clients', 'node', 'test', 'loopback.js')).href);

function check(condition, message) {
  if (!condition) {
    process.stderr.write(`package-check (node): FAILED: ${message}\n`);
    process.exit(1);
  }
}

const clientDir = resolve(fromInstall.resolve('image-worker'), '..');
check(!clientDir.startsWith(repo + '/'), `image-worker is loaded from the source tree (${clientDir})`);
const found = client.findBinary();
check(found.source === 'bundled', `findBinary() found ${found.path} (${found.source}), not the platform package's`);
check(found.path.startsWith(join(installDir, 'node_modules', '@image-worker', 'linux-x64-gnu') + '/'),
  `the worker ${found.path} is not in node_modules/@image-worker/linux-x64-gnu`);
const version = execFileSync(join(installDir, 'node_modules', '.bin', 'image-worker'), ['--version']).toString().trim();
check(version === JSON.parse(execFileSync('cat', [join(clientDir, 'package.json')]).toString()).version,
  `node_modules/.bin/image-worker --version said ${version}`);

// What npm's page and `npm view` show: repository, home page, issues, keywords, author.
const meta = JSON.parse(readFileSync(join(clientDir, 'package.json'), 'utf8'));
check(/^git\+https:\/\//.test(meta.repository?.url ?? '') && /^https:\/\//.test(meta.homepage ?? '') && /^https:\/\//.test(meta.bugs?.url ?? ''),
  `package.json: repository ${JSON.stringify(meta.repository)}, homepage ${meta.homepage}, bugs ${JSON.stringify(meta.bugs)}`);
check(Array.isArray(meta.keywords) && meta.keywords.includes('image') && typeof meta.author === 'string', `package.json: keywords ${meta.keywords}, author ${meta.author}`);

const server = await startServer();
const out = mkdtempSync(join(tmpdir(), 'package-check-'));
try {
  const worker = await client.spawnWorker();
  check(worker.binarySource === 'bundled', `spawnWorker() started ${worker.binarySource}`);
  const handle = worker.download(server.url("/files/testimgp.jpg?chunk=256&delayMs=15"),
    { dir: out, format: 'png', progressive: true });
  let partials = 0;
  handle.on('partialImage', () => { partials += 1; });
  const image = await handle.done;
  check(partials >= 1, 'no partial image while a progressive JPEG arrived');
  check(image.width === 227 && image.height === 149 && statSync(image.path).size > 0, `testimgp.jpg: ${JSON.stringify(image)}`);
  console.log(`package-check (node): ${partials} partial images, then ${image.path} ${image.width}x${image.height}`);
  await worker.close();

  const names = ['testorig.jpg', 'basn2c08.png', 'basi6a08.png', 'test.webp', 'extended_pixi.avif', 'beacon.gif'];
  const seen = [];
  for await (const outcome of client.downloadMany(names.map((n) => server.url(`/files/${n}`)),
    { dir: join(out, 'bulk'), format: 'png' })) {
    check(outcome.ok && outcome.image.width > 0, `${outcome.url}: ${outcome.error?.message}`);
    seen.push(outcome.url);
  }
  check(seen.length === names.length, `downloadMany gave ${seen.length} outcomes for ${names.length} URLs`);
  console.log(`package-check (node): decoded ${names.join(', ')}`);
} finally {
  await server.close();
  rmSync(out, { recursive: true, force: true });
}
console.log('package-check (node): ok');
