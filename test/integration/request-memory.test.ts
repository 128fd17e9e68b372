// A /v1/messages, /v1/chat/completions or /v1/responses call waiting on its upstream holds its request's bytes, not
// the tree they parse to: a coding agent's request parses to several times its size in the heap,
// and a call lives for seconds, so a held tree is copied by the garbage collector and moved to the
// old generation. Eight ~600 KB requests wait on an upstream that answers only when told; the heap
// they add while they wait is measured after full collections, against what eight parsed copies of
// the request take. Then they are answered and billed. On Node (the collector is V8's; Bun's is
// another).
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { EMBEDDED_CONFIG } from '../../src/config';
import { startTestGateway, type TestGateway } from '../helpers/gateway';
import { createKey, flushCharges } from './chat-harness';

const SKIP = process.versions.bun ? 'measures V8\'s heap' : false;
const CALLS = 8;
const MESSAGE = { id: 'msg_1', type: 'message', role: 'assistant', model: 'held-claude', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 50_000, output_tokens: 2 } };
const RESPONSE = {
  id: 'resp_1', object: 'response', created_at: 1, status: 'completed', model: 'held-gpt',
  output: [{ type: 'message', id: 'msg_1', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'ok', annotations: [] }] }],
  usage: { input_tokens: 50_000, output_tokens: 2, total_tokens: 50_002, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } },
};
const COMPLETION = {
  id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'held-gpt', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 50_000, completion_tokens: 2, total_tokens: 50_002 },
};

/** An Anthropic and OpenAI upstream that reads each request whole and answers when release() is called. */
function startHoldingUpstream(): Promise<{ url: string; waiting(): number; release(): void; close(): Promise<void> }> {
  const held: Array<() => void> = [];
  const server: Server = createServer((request, response) => {
    request.resume();
    request.on('end', () => held.push(() => {
      response.writeHead(200, { 'content-type': 'application/json' });
      const path = request.url ?? '';
      response.end(JSON.stringify(path.endsWith('/messages') ? MESSAGE : path.endsWith('/responses') ? RESPONSE : COMPLETION));
    }));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    waiting: () => held.length,
    release: () => { for (const answer of held.splice(0)) answer(); },
    close: () => new Promise((closed) => { server.close(() => closed()); server.closeAllConnections(); }),
  })));
}

/** A long coding session: ~600 KB of short text blocks, each its own object, in the route's shape. */
function longRequest(model: string, path: string): string {
  const turns = Array.from({ length: 1200 }, (_, index) => {
    const role = index % 2 === 0 ? 'user' : 'assistant';
    const text = `step ${index}: ${'read the file, change the function, run the tests → '.repeat(8)}`;
    return { role, content: [{ type: path === '/v1/responses' ? (role === 'user' ? 'input_text' : 'output_text') : 'text', text }] };
  });
  return JSON.stringify(path === '/v1/responses' ? { model, max_output_tokens: 1024, input: turns } : { model, max_tokens: 1024, messages: turns });
}

let upstream: Awaited<ReturnType<typeof startHoldingUpstream>>;
let gateway: TestGateway;
let collect: () => void;

before(async () => {
  if (SKIP) return;
  setFlagsFromString('--expose-gc');
  collect = runInNewContext('gc') as () => void;
  upstream = await startHoldingUpstream();
  gateway = await startTestGateway({
    raw: {
      ...EMBEDDED_CONFIG,
      models: [...EMBEDDED_CONFIG.models, { id: 'held-claude', owned_by: 'mock-lab', price: { input: 3, output: 15 } },
        { id: 'held-gpt', owned_by: 'mock-lab', price: { input: 3, output: 15 } }],
      channels: [
        { name: 'held', type: 'anthropic', base_url: upstream.url, keys: ['k'], models: ['held-claude'] },
        { name: 'held-openai', type: 'openai', base_url: upstream.url, keys: ['k'], models: ['held-gpt'] },
      ],
    },
  });
  await gateway.gateway.context.store.accounts.topUp(1, 100_000_000);
});

after(async () => {
  await gateway?.close();
  await upstream?.close();
});

const heapAfterCollection = () => { collect(); collect(); return process.memoryUsage().heapUsed; };

const ROUTES: Array<{ path: string; model: string; headers: Record<string, string> }> = [
  { path: '/v1/messages', model: 'held-claude', headers: { 'anthropic-version': '2023-06-01' } },
  { path: '/v1/chat/completions', model: 'held-gpt', headers: {} },
  { path: '/v1/responses', model: 'held-gpt', headers: {} },
];

for (const route of ROUTES) {
  test(`${route.path}: ${CALLS} large requests waiting on their upstream hold their bytes, not their parsed trees; then answered and billed`, { skip: SKIP }, async () => {
    const body = longRequest(route.model, route.path);
    const key = await createKey(gateway.url, gateway.adminToken, { unlimited_quota: true });
    // what eight parsed copies of the request take in this heap
    const before = heapAfterCollection();
    const copies = Array.from({ length: CALLS }, () => JSON.parse(body) as unknown);
    const parsed = heapAfterCollection() - before;
    assert.equal(copies.length, CALLS);
    copies.length = 0;

    const start = heapAfterCollection();
    const answers = Array.from({ length: CALLS }, () => fetch(`${gateway.url}${route.path}`, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key.key}`, ...route.headers }, body,
    }));
    const deadline = Date.now() + 20_000;
    while (upstream.waiting() < CALLS && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(upstream.waiting(), CALLS, 'every call reached the upstream');
    const waiting = heapAfterCollection() - start;
    upstream.release();
    const statuses = await Promise.all(answers.map(async (answer) => { const response = await answer; await response.text(); return response.status; }));

    assert.ok(parsed > CALLS * 1024 * 1024, `eight parsed copies take ${parsed} bytes`);
    assert.ok(waiting < parsed / 4, `the waiting calls added ${waiting} bytes to the heap; eight parsed requests take ${parsed}`);
    assert.deepEqual(statuses, Array.from({ length: CALLS }, () => 200));
    await flushCharges({ gateway });
    const records = (await gateway.gateway.context.store.usage.list(1, { keyId: key.id }, 0, 100)).items;
    assert.equal(records.length, CALLS);
    assert.ok(records.every((record) => record.prompt_tokens === 50_000 && record.completion_tokens === 2 && record.status === 200 && record.model === route.model));
  });
}
