// The same contract everywhere: replay protocol/transcripts against the real binary, check
// every message against protocol/schema, and hold the client's event model to the schemas.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import * as client from '../index.js';
import { EVENT_FIELDS, ERRORS_BY_CODE, IMAGE_FIELDS, downloadParams, parseEvent } from '../index.js';
import { WORKER_NOTIFICATION_FIELDS } from '../lib/events.js';
import { SAMPLES, binaryPath, startServer } from './loopback.js';
import { Schemas, incomingSchema, loadTranscript, matches, orderKey, outgoingSchema, transcriptNames } from './schema.js';

const binary = binaryPath();
const schemas = new Schemas();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test('there are transcripts', () => assert.ok(transcriptNames().length >= 8));

for (const name of transcriptNames()) {
  test(`replay ${name}`, async () => {
    const server = await startServer();
    const out = mkdtempSync(join(tmpdir(), 'iw-transcript-'));
    const transcript = loadTranscript(name, { BASE: server.base, OUT: out, SAMPLES });
    const child = spawn(binary, transcript.args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const messages = [];
    let pending = Buffer.alloc(0);
    let stderr = '';
    // Lines, or Content-Length frames (the worker answers that framing in kind); bytes, so that
    // neither a frame's length nor a character is cut by a chunk boundary.
    const header = Buffer.from('Content-Length: ');
    child.stdout.on('data', (chunk) => {
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        let body;
        if (pending.subarray(0, header.length).equals(header)) {
          const end = pending.indexOf('\r\n\r\n');
          if (end < 0) break;
          const length = Number(pending.subarray(header.length, end).toString());
          if (pending.length < end + 4 + length) break;
          body = pending.subarray(end + 4, end + 4 + length);
          pending = pending.subarray(end + 4 + length);
        } else {
          const newline = pending.indexOf(10);
          if (newline < 0) break;
          body = pending.subarray(0, newline);
          pending = pending.subarray(newline + 1);
        }
        if (body.length) messages.push(JSON.parse(body.toString('utf8')));
      }
    });
    child.stderr.on('data', (chunk) => { stderr += chunk; });
    const exited = new Promise((resolve) => child.on('close', (code) => resolve(code)));
    const matched = new Set();
    const lastIndex = new Map();
    const methodsById = new Map();
    try {
      for (const step of transcript.steps) {
        if (step.send === null) {
          child.stdin.end();
        } else {
          let sent;
          try {
            sent = JSON.parse(step.send);
          } catch {
            assert.ok(step.invalid, `${name}: ${step.send} is not JSON but not marked -->!`);
          }
          for (const element of sent === undefined ? [] : Array.isArray(sent) ? sent : [sent]) {
            if (element && typeof element === 'object' && 'id' in element && typeof element.method === 'string') {
              methodsById.set(JSON.stringify(element.id), element.method);
            }
            if (!step.invalid && element && typeof element === 'object') {
              const schema = incomingSchema(element) ?? 'none';
              assert.deepEqual(schemas.problems(element, schema), [], `${name}: request ${step.send}`);
            }
          }
          const body = Buffer.from(step.send);
          child.stdin.write(transcript.contentLength
            ? Buffer.concat([Buffer.from(`Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: ${body.length}\r\n\r\n`), body])
            : Buffer.concat([body, Buffer.from('\n')]));
        }
        for (const pattern of step.expected) {
          const key = orderKey(pattern);
          const after = lastIndex.get(key) ?? -1;
          const deadline = Date.now() + 30000;
          let index;
          for (;;) {
            index = messages.findIndex((m, i) => i > after && !matched.has(i) && matches(pattern, m));
            if (index >= 0) break;
            if (Date.now() > deadline) {
              assert.fail(`${name}: never received ${JSON.stringify(pattern)}\nreceived:\n${messages.map((m) => JSON.stringify(m)).join('\n')}\nstderr:\n${stderr}`);
            }
            await sleep(5);
          }
          matched.add(index);
          lastIndex.set(key, index);
        }
      }
      if (transcript.exitStatus === null) child.stdin.end();
      const status = await exited;
      if (transcript.exitStatus !== null) assert.equal(status, transcript.exitStatus, `${name}: exit status`);
    } finally {
      child.kill('SIGKILL');
      await server.close();
      rmSync(out, { recursive: true, force: true });
    }
    messages.forEach((message, i) => {
      if (matched.has(i)) return;
      const allowed = message.method === 'download/progress' || transcript.optional.some((p) => matches(p, message));
      assert.ok(allowed, `${name}: unexpected message ${JSON.stringify(message)}`);
    });
    for (const message of messages) {
      for (const element of Array.isArray(message) ? message : [message]) {
        const method = 'id' in element ? methodsById.get(JSON.stringify(element.id)) : undefined;
        const schema = outgoingSchema(element, method);
        assert.ok(schema, `${name}: no schema for ${JSON.stringify(element)}`);
        assert.deepEqual(schemas.problems(element, schema), [], `${name}: ${JSON.stringify(element)} against ${schema}`);
        if (typeof element.method === 'string' && element.method.startsWith('download/')) {
          const event = parseEvent(element.method, element.params);
          assert.ok(event, `${name}: the client cannot read ${JSON.stringify(element)}`);
          const known = element.method === 'download/completed' && element.params.outcome === 'success'
            ? IMAGE_FIELDS : EVENT_FIELDS[element.method];
          const unknown = Object.keys(element.params).filter((k) => !known.includes(k));
          assert.deepEqual(unknown, [], `${name}: the client has no field for ${unknown} of ${element.method}`);
        }
      }
    }
  });
}

test('the client\'s event fields are the schemas\' fields', () => {
  const eventSchemas = Object.keys(schemas.documents).filter((n) => n.startsWith('events/download-'));
  const methods = eventSchemas.map((n) => schemas.documents[n].properties.method.const).sort();
  assert.deepEqual(methods, Object.keys(EVENT_FIELDS).sort());
  const own = Object.keys(schemas.documents).filter((n) => n.startsWith('events/') && !eventSchemas.includes(n));
  assert.deepEqual(own.map((n) => schemas.documents[n].properties.method.const).sort(), Object.keys(WORKER_NOTIFICATION_FIELDS).sort());
  for (const name of own) {
    const doc = schemas.documents[name];
    assert.deepEqual(Object.keys(doc.properties.params.properties).sort(), [...WORKER_NOTIFICATION_FIELDS[doc.properties.method.const]].sort(), name);
  }
  for (const name of eventSchemas) {
    const doc = schemas.documents[name];
    const params = doc.properties.params;
    const success = new Set();
    for (const variant of params.oneOf ?? [params]) {
      const fields = Object.keys(variant.properties ?? {}).sort();
      if (variant.properties?.outcome?.const === 'success') {
        // A fetched image and a kept file (skipped): together, the image's fields.
        for (const field of fields) { assert.ok(IMAGE_FIELDS.includes(field), `${name}: ${field}`); success.add(field); }
        continue;
      }
      assert.deepEqual(fields, [...EVENT_FIELDS[doc.properties.method.const]].sort(), `${name}`);
    }
    if (success.size) assert.deepEqual([...success].sort(), [...IMAGE_FIELDS].sort(), `${name}: image fields`);
  }
});

test('every error code has its class', () => {
  const error = schemas.documents['common.schema.json'].$defs.downloadError;
  assert.deepEqual(Object.keys(ERRORS_BY_CODE).map(Number).sort(), [...error.properties.code.enum].sort());
  for (const name of error.properties.data.properties.name.enum) {
    assert.equal(client[name]?.errorName, name, `class ${name}`);
  }
});

test('requests the client builds are valid, and every download option can be set', () => {
  const params = downloadParams('https://example.org/a.jpg', 't', {
    dir: '/tmp/x', format: 'rgba', progressive: true, priority: 'high', headers: { 'X-A': 'b' }, timeoutMs: 5000,
    deadlineMs: 9000, maxRetries: 0, retryDelayMs: 10,
    credentials: { user: 'u', password: 'p' }, allowInvalidCertificates: true, handleCookies: true, retryFailed: true, cachePolicy: 'preferCache',
    maxPixelSize: 100, maxPixelCount: 10000, applyOrientation: true, colorProfile: 'keep', overwrite: true, partialIntervalMs: 0,
    partialMaxPixelSize: 64, nameTemplate: '{token}-{index:3}.{ext}', index: 7, verify: true, sha256: true, frames: 'all',
    minImageSize: 10, maxImageArea: 1000000, maxAspectRatio: 2.5,
  });
  const named = downloadParams('u', 2, { dir: '/tmp/x', name: 'a/b.png', skipExisting: true });
  assert.deepEqual(schemas.problems({ jsonrpc: '2.0', method: 'download', params: named }, 'requests/download.schema.json'), []);
  const request = { jsonrpc: '2.0', id: 1, method: 'download', params };
  assert.deepEqual(schemas.problems(request, 'requests/download.schema.json'), []);
  const schemaParams = schemas.documents['requests/download.schema.json'].properties.params.properties;
  // quiet excludes progressive: set apart.
  const quiet = downloadParams('u', 5, { dir: '/tmp/x', quiet: true });
  assert.deepEqual(schemas.problems({ jsonrpc: '2.0', method: 'download', params: quiet }, 'requests/download.schema.json'), []);
  // (_meta is the caller's, not an option: accepted and ignored on every method.)
  assert.deepEqual([...new Set([...Object.keys(params), ...Object.keys(quiet)])].sort(), Object.keys(schemaParams).filter((k) => k !== '_meta').sort());
  assert.throws(() => downloadParams('u', 6, { quiet: true, progressive: true }), /quiet/);
  const jpeg = downloadParams('u', 3, { format: 'jpeg', quality: 75, chromaSubsampling: '4:4:4' });
  const webp = downloadParams('u', 4, { format: 'webp', quality: 60, lossless: true, inline: true });
  for (const encoded of [jpeg, webp]) {
    assert.deepEqual(schemas.problems({ jsonrpc: '2.0', method: 'download', params: encoded }, 'requests/download.schema.json'), []);
  }
  const boxed = downloadParams('u', 8, { format: 'png', width: 64, height: 64, fit: 'contain', position: 'left', background: '#ffffff', withoutEnlargement: true });
  assert.deepEqual(schemas.problems({ jsonrpc: '2.0', method: 'download', params: boxed }, 'requests/download.schema.json'), []);
  const output = new Set([...Object.keys(params.output), ...Object.keys(named.output), ...Object.keys(jpeg.output),
    ...Object.keys(webp.output), ...Object.keys(boxed.output), 'path', 'delivery']);
  for (const key of Object.keys(schemaParams.output.properties)) assert.ok(output.has(key), `output.${key}`);
});
