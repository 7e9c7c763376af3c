// The router alone: lines in, actions out; no process.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { RequestError } from '../lib/errors.js';
import { Router } from '../lib/router.js';

function fakeHandle(url = 'http://x.test/a.png') {
  return { url, delivered: [], failed: [], _deliver(e) { this.delivered.push(e); }, _fail(e) { this.failed.push(e); } };
}

function reply() {
  const r = { resolved: [], rejected: [] };
  r.resolve = (v) => r.resolved.push(v);
  r.reject = (e) => r.rejected.push(e);
  return r;
}

const run = (actions) => actions.forEach((a) => a());

test('a reply resolves its request, once; an error reply rejects it with a RequestError', () => {
  const router = new Router();
  const ok = reply();
  const bad = reply();
  assert.deepEqual(router.request('status', undefined, ok), { jsonrpc: '2.0', id: 1, method: 'status' });
  assert.deepEqual(router.request('cancel', { token: 't' }, bad), { jsonrpc: '2.0', id: 2, method: 'cancel', params: { token: 't' } });
  assert.equal(router.busy, true);
  run(router.route('{"jsonrpc":"2.0","id":1,"result":{"queued":0}}'));
  run(router.route('{"jsonrpc":"2.0","id":1,"result":{"queued":9}}')); // answered already: nothing
  run(router.route('{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Invalid params","data":{"field":"token"}}}'));
  assert.deepEqual(ok.resolved, [{ queued: 0 }]);
  assert.equal(bad.rejected.length, 1);
  assert.ok(bad.rejected[0] instanceof RequestError);
  assert.equal(bad.rejected[0].code, -32602);
  assert.equal(router.busy, false);
});

test("events go to their token's handle, the last one ends it; others are dropped", () => {
  const router = new Router('t-');
  const token = router.newToken();
  assert.equal(token, 't-1');
  const handle = fakeHandle();
  router.addHandle(token, handle);
  assert.throws(() => router.addHandle(token, fakeHandle()), /already in use/);
  run(router.route(JSON.stringify({ jsonrpc: '2.0', method: 'download/started', params: { token, url: handle.url } })));
  run(router.route(JSON.stringify({ jsonrpc: '2.0', method: 'download/started', params: { token: 'other', url: handle.url } })));
  assert.equal(router.busy, true);
  const completed = {
    token, url: handle.url, outcome: 'error',
    error: { code: 1005, message: 'status 404', data: { name: 'InvalidDownloadStatusCode', statusCode: 404 } },
  };
  run(router.route(JSON.stringify({ jsonrpc: '2.0', method: 'download/completed', params: completed })));
  assert.deepEqual(handle.delivered.map((e) => e.type), ['started', 'completed']);
  assert.equal(router.busy, false, 'the completed token is no longer routed');
  run(router.route(JSON.stringify({ jsonrpc: '2.0', method: 'download/progress', params: { token, receivedBytes: 1 } })));
  assert.equal(handle.delivered.length, 2);
});

test('a batch is routed in order; a line that is not JSON is dropped', () => {
  const router = new Router();
  const first = reply();
  const second = reply();
  router.request('status', undefined, first);
  router.request('status', undefined, second);
  assert.deepEqual(router.route('not json'), []);
  const actions = router.route('[{"jsonrpc":"2.0","id":2,"result":2},{"jsonrpc":"2.0","id":1,"result":1},3,null]');
  assert.equal(actions.length, 2);
  const order = [];
  first.resolve = () => order.push(1);
  second.resolve = () => order.push(2);
  run(actions);
  assert.deepEqual(order, [2, 1]);
});

test('failAll fails every awaited reply and live handle, and later calls see the first error', () => {
  const router = new Router();
  const waiting = reply();
  router.request('status', undefined, waiting);
  const handle = fakeHandle();
  router.addHandle('a', handle);
  const gone = new Error('gone');
  const actions = router.failAll(gone);
  assert.equal(router.busy, false, 'cleared before the callbacks run');
  run(actions);
  assert.deepEqual(waiting.rejected, [gone]);
  assert.deepEqual(handle.failed, [gone]);
  router.failAll(new Error('later'));
  assert.equal(router.failure, gone);
});
