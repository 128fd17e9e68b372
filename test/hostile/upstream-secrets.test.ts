// Issue 21 item 14, the rest of it: an upstream's text that reaches the client inside a stream (an
// error event, in any dialect, straight or translated) or a video task's failure has the channel's
// key, its URL and anything key-shaped redacted, as an upstream's 4xx body has (secrets.test.ts).
// The upstream here is careless on purpose: its error events quote the key it was sent and its URL,
// and arrive split over two writes. Money invariants after every scenario.
import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { after, before, beforeEach, describe, test } from 'node:test';
import { EMBEDDED_CONFIG } from '../../src/config';
import { pollVideoTasksOnce } from '../../src/relay/video-poller';
import { createLogger } from '../../src/log';
import { call, FRONTS, startTestGateway, type TestGateway } from '../helpers/gateway';
import { assertMoneyInvariants, moneySnapshot, type MoneySnapshot } from '../helpers/money';
import { createKey, sleep } from '../integration/chat-harness';

/** Not key-shaped: only the channel's own key list can redact it. */
const CHANNEL_KEY = 'chan-Key-Zq81-private';
const STRANGER_KEY = 'sk-live-AbCdEf0123456789xyz';
/** Key-shaped, in an ordinary event: it must reach the client as it was. */
const KEPT_ID = 'resp_0123456789abcdef0123456789abcdefAB';

/** A careless upstream for every dialect: a first event, then an error event quoting its secrets, cut in two writes. */
function startCarelessUpstream(): Promise<{ server: Server; url: string; leaks: () => string[] }> {
  let url = '';
  const message = () => `upstream ${url}/v1 failed for key ${CHANNEL_KEY} (also tried ${STRANGER_KEY}); details at ${url.replace(/\//g, '\\/')}\\/status`;
  const sendSplit = async (response: ServerResponse, event: string) => {
    const half = Math.floor(event.length / 2);
    response.write(event.slice(0, half));
    await sleep(30);
    response.end(event.slice(half));
  };
  const server = createServer((request, response) => {
    const parts: Buffer[] = [];
    request.on('data', (chunk: Buffer) => parts.push(chunk));
    request.on('end', () => {
      const text = Buffer.concat(parts).toString('utf8');
      const body = (text === '' ? {} : JSON.parse(text)) as { model?: string };
      const path = (request.url ?? '').split('?')[0];
      if (path.startsWith('/veo/v1/api/video/submit')) {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ success: true, data: { taskId: 'up-1' } }));
        return;
      }
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      const escaped = JSON.stringify(message()).slice(1, -1);
      if (path === '/v1/messages') {
        response.write(`event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"${body.model}","content":[],"stop_reason":null,"usage":{"input_tokens":5,"output_tokens":1}}}\n\n`);
        response.write('event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n');
        response.write('event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"error"}}\n\n');
        void sendSplit(response, `event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"${escaped}"}}\n\n`);
        return;
      }
      if (path === '/v1/responses') {
        // response.created carries `"error":null` and a key-shaped id: neither makes it an error event
        response.write(`event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":{"id":"${KEPT_ID}","object":"response","created_at":1,"status":"in_progress","error":null,"model":"${body.model}","output":[],"usage":null}}\n\n`);
        response.write(`event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":1,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"error"}\n\n`);
        void sendSplit(response, `event: error\ndata: {"type":"error","sequence_number":2,"code":"server_error","message":"${escaped}","param":null}\n\n`);
        return;
      }
      if (path === '/v1/completions') {
        response.write(`data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"${body.model}","choices":[{"index":0,"text":"error","finish_reason":null}]}\n\n`);
      } else {
        response.write(`data: {"id":"${KEPT_ID}","object":"chat.completion.chunk","created":1,"model":"${body.model}","choices":[{"index":0,"delta":{"role":"assistant","content":"error"},"finish_reason":null}]}\n\n`);
      }
      void sendSplit(response, `data: {"error":{"message":"${escaped}","type":"server_error","code":null}}\n\n`);
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    resolve({ server, url, leaks: () => [CHANNEL_KEY, STRANGER_KEY, url, url.replace(/\//g, '\\/'), new URL(url).host] });
  }));
}

for (const front of FRONTS) describe(`upstream text in streams and video tasks is redacted (${front} front)`, () => {
  let upstream: Awaited<ReturnType<typeof startCarelessUpstream>>;
  let gateway: TestGateway;
  let key: string;
  let moneyBefore: MoneySnapshot;
  const store = () => gateway.gateway.context.store;

  before(async () => {
    upstream = await startCarelessUpstream();
    gateway = await startTestGateway({
      front,
      raw: {
        ...EMBEDDED_CONFIG,
        models: [...EMBEDDED_CONFIG.models, { id: 'leak-openai', price: { input: 1, output: 2 } }, { id: 'leak-anthropic', price: { input: 1, output: 2 } }],
        channels: [{ ...EMBEDDED_CONFIG.channels[0], models: EMBEDDED_CONFIG.channels[0].models.filter((model) => model !== 'veo3-pro') },
          { name: 'careless-openai', type: 'openai', base_url: upstream.url, keys: [CHANNEL_KEY], models: ['leak-openai'] },
          { name: 'careless-anthropic', type: 'anthropic', base_url: upstream.url, keys: [CHANNEL_KEY], models: ['leak-anthropic'] },
          { name: 'careless-video', type: 'video-legacy', base_url: upstream.url, keys: [CHANNEL_KEY], models: ['veo3-pro'] }],
      },
    });
    await store().accounts.topUp(1, 100_000_000);
    key = (await createKey(gateway.url, gateway.adminToken, { unlimited_quota: true })).key;
  });
  after(async () => {
    await gateway?.close();
    upstream?.server.close();
  });
  beforeEach(async () => {
    await gateway.gateway.context.ledger.flush();
    moneyBefore = await moneySnapshot(store());
  });

  const assertNoLeak = (text: string, label: string) => {
    for (const secret of upstream.leaks()) assert.ok(!text.includes(secret), `${label}: ${secret} reached the client: ${text}`);
  };

  const cases: Array<{ path: string; model: string; body: Record<string, unknown>; keepsId?: boolean }> = [
    { path: '/v1/chat/completions', model: 'leak-openai', body: { messages: [{ role: 'user', content: 'hi' }] }, keepsId: true },
    { path: '/v1/chat/completions', model: 'leak-anthropic', body: { messages: [{ role: 'user', content: 'hi' }] } },
    { path: '/v1/messages', model: 'leak-anthropic', body: { max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] } },
    { path: '/v1/messages', model: 'leak-openai', body: { max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] } },
    { path: '/v1/completions', model: 'leak-openai', body: { prompt: 'hi', max_tokens: 50 } },
    { path: '/v1/responses', model: 'leak-openai', body: { input: 'hi', max_output_tokens: 50 }, keepsId: true },
  ];
  for (const { path, model, body, keepsId } of cases) {
    test(`${path} on ${model}: an error event quoting the channel key, an sk- key and the URL reaches the client redacted`, async () => {
      const answer = await call(gateway.url, 'POST', path, {
        token: `Bearer ${key}`, headers: { 'anthropic-version': '2023-06-01' }, body: { model, stream: true, ...body },
      });
      assert.equal(answer.status, 200, answer.text);
      assertNoLeak(answer.text, `${path} ${model}`);
      assert.match(answer.text, /failed for key \[redacted\]/, answer.text);
      // the content before it, the word "error" included, is not touched
      assert.match(answer.text, /"(?:content|text|delta)":"error"/, answer.text);
      if (keepsId) assert.ok(answer.text.includes(KEPT_ID), `an ordinary event was rewritten: ${answer.text}`);
      await gateway.gateway.context.ledger.flush();
      await assertMoneyInvariants(store(), moneyBefore, `${path} ${model}`);
    });
  }

  test('a video task that fails upstream with a message quoting the channel key and URL shows it redacted, and is refunded', async () => {
    const submitted = await fetch(`${gateway.url}/veo/v1/api/video/submit`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ prompt: 'a comet', model: 'veo3-pro' }),
    });
    const taskId = ((await submitted.json()) as { data: { taskId: string } }).data.taskId;
    assert.equal(submitted.status, 200);
    // the poller reads the upstream's status answer: failed, with a message that leaks
    const statusServer = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ success: true, data: { status: 'failed', message: `render node at ${upstream.url} refused key ${CHANNEL_KEY}; token ${STRANGER_KEY}` } }));
    });
    upstream.server.removeAllListeners('request');
    upstream.server.on('request', (request, response) => statusServer.emit('request', request, response));
    const context = gateway.gateway.context;
    await pollVideoTasksOnce(context.store, context.config, context.providers, createLogger('error'));
    const status = await call(gateway.url, 'GET', `/veo/v1/api/video/status/${encodeURIComponent(taskId)}`, { token: `Bearer ${key}` });
    assert.equal(status.json.data.status, 'failed', status.text);
    assert.match(status.json.data.message, /refused key \[redacted\]/);
    assertNoLeak(status.text, 'video status');
    await gateway.gateway.context.ledger.flush();
    assert.equal(await assertMoneyInvariants(store(), moneyBefore, 'video failed'), 0, 'the failed task is refunded');
  });
});
