// A request that carries its credential twice (two Authorization lines, two x-api-key lines) or two
// Content-Type lines, over raw sockets on both fronts. The fronts read repeated lines differently:
// node:http keeps the first Authorization and Content-Type and joins x-api-key lines, uSockets keeps
// the last of each. So the same image generation with `Authorization: Bearer A` and `Authorization:
// Bearer B` was charged to key A on the node front and to key B on the uWS front; two x-api-key
// lines were a 401 on one front and a call charged to the second key on the other; a multipart edit
// with two Content-Type lines was read with one boundary or the other. Now both fronts refuse such a
// request with a 400 in the route's dialect that names the header, nothing billed, and a request
// with one of each (Authorization plus x-api-key included) is served as before.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FRONTS, parseRawAnswer, rawExchange } from '../helpers/gateway';
import { chatConfig, createKey, flushCharges, moneyScenarios, type ChatSetup } from '../integration/chat-harness';

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAAC0lEQVR4nGNgAAIAAAUAAXpeqz8AAAAASUVORK5CYII=', 'base64');

function config(mockUrl: string): Record<string, unknown> {
  const raw = chatConfig(mockUrl) as { models: unknown[]; channels: Array<Record<string, unknown>> };
  return {
    ...raw,
    models: [...raw.models, { id: 'mock-image', kind: 'image', price: { per_call: 0.04 } }, { id: 'mock-chat-image', chat_image: true, price: { per_call: 0.02 } }],
    channels: [{ name: 'mock-images', type: 'openai', base_url: mockUrl, keys: ['image-key'], models: ['mock-image', 'mock-chat-image'] }, ...raw.channels],
  };
}

type Dialect = 'openai' | 'anthropic' | 'video' | 'envelope';

/** The error message of an answer in `dialect`'s error shape; fails when the body has another shape. */
function dialectMessage(body: string, dialect: Dialect): string {
  const parsed = JSON.parse(body) as Record<string, any>;
  switch (dialect) {
    case 'openai': assert.equal(parsed.error?.type, 'invalid_request_error', body); return parsed.error.message;
    case 'anthropic': assert.equal(parsed.type, 'error', body); return parsed.error.message;
    case 'video': assert.equal(parsed.success, false, body); assert.equal(typeof parsed.error_code, 'string', body); return parsed.message;
    case 'envelope': assert.equal(parsed.success, false, body); assert.ok(!('error' in parsed), body); return parsed.message;
  }
}

const BOUNDARY = '----once';
const FORM = Buffer.concat([
  Buffer.from(`--${BOUNDARY}\r\ncontent-disposition: form-data; name="model"\r\n\r\nmock-image\r\n--${BOUNDARY}\r\ncontent-disposition: form-data; name="prompt"\r\n\r\na boat\r\n`),
  Buffer.from(`--${BOUNDARY}\r\ncontent-disposition: form-data; name="image"; filename="a.png"\r\ncontent-type: image/png\r\n\r\n`), PNG,
  Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
]);

interface Route { label: string; path: string; dialect: Dialect; contentType: string; body: Buffer }
const json = (value: unknown) => Buffer.from(JSON.stringify(value));
const ROUTES: Route[] = [
  { label: 'image generation', path: '/v1/images/generations', dialect: 'openai', contentType: 'application/json', body: json({ model: 'mock-image', prompt: 'a lighthouse' }) },
  { label: 'image edit', path: '/v1/images/edits', dialect: 'openai', contentType: `multipart/form-data; boundary=${BOUNDARY}`, body: FORM },
  { label: 'chat image', path: '/v1/chat/completions', dialect: 'openai', contentType: 'application/json', body: json({ model: 'mock-chat-image', messages: [{ role: 'user', content: 'a cat 【1:1】' }] }) },
  { label: 'video submit', path: '/veo/v1/api/video/submit', dialect: 'video', contentType: 'application/json', body: json({ model: 'veo3', prompt: 'a coast' }) },
  { label: 'messages stream', path: '/v1/messages', dialect: 'anthropic', contentType: 'application/json', body: json({ model: 'mock-chat', max_tokens: 5, stream: true, messages: [{ role: 'user', content: 'hi' }] }) },
];

function request(route: Route, headerLines: string): Buffer {
  return Buffer.concat([
    Buffer.from(`POST ${route.path} HTTP/1.1\r\nhost: 127.0.0.1\r\nanthropic-version: 2023-06-01\r\n${headerLines}content-length: ${route.body.length}\r\n\r\n`),
    route.body,
  ]);
}

for (const front of FRONTS) describe(`a credential or Content-Type sent twice (${front} front)`, () => {
  let setup: ChatSetup;
  const { store, admin, settled } = moneyScenarios({ front, raw: config }, (ready) => { setup = ready; });
  const used = async (keyId: number) => (await store().keys.byId(keyId))!.used_quota;

  test('two Authorization or two x-api-key lines: a 400 in the route\'s dialect naming the header, connection closed, neither key charged', async () => {
    const first = await createKey(setup.url, admin(), { name: 'first', remain_quota: 5_000_000 });
    const second = await createKey(setup.url, admin(), { name: 'second', remain_quota: 5_000_000 });
    for (const route of ROUTES) {
      for (const [lines, header] of [
        [`authorization: Bearer ${first.key}\r\nauthorization: Bearer ${second.key}\r\n`, 'Authorization'],
        [`authorization: Bearer ${first.key}\r\nauthorization: Bearer ${first.key}\r\n`, 'Authorization'],
        [`x-api-key: ${first.key}\r\nx-api-key: ${second.key}\r\n`, 'x-api-key'],
      ]) {
        const label = `${route.label}, two ${header}`;
        const result = await rawExchange(setup.gateway.port, [request(route, `${lines}content-type: ${route.contentType}\r\n`)], 3_000);
        const answer = parseRawAnswer(result.text);
        assert.equal(answer.status, 400, `${label}: ${result.text.slice(0, 300)}`);
        assert.match(dialectMessage(answer.body, route.dialect), new RegExp(`more than one ${header} header`), label);
        assert.equal(result.closed, true, `${label}: the connection is closed`);
      }
    }
    assert.equal(setup.mock.requests.length, 0, 'nothing reached the upstream');
    await flushCharges(setup);
    assert.equal(await used(first.id), 0);
    assert.equal(await used(second.id), 0);
    assert.equal(await settled('credentials twice'), 0);
  });

  test('two access tokens on the key API: a 400 in the envelope, no key created', async () => {
    const before0 = (await store().keys.list(1, 0, 1)).total;
    const body = '{"name":"twice"}';
    const result = await rawExchange(setup.gateway.port, [
      `POST /api/token/ HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: ${admin()}\r\nauthorization: ${admin()}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
    ], 3_000);
    const answer = parseRawAnswer(result.text);
    assert.equal(answer.status, 400, result.text.slice(0, 300));
    assert.match(dialectMessage(answer.body, 'envelope'), /more than one Authorization header/);
    assert.equal((await store().keys.list(1, 0, 1)).total, before0);
  });

  test('two Content-Type lines on an image edit: a 400 naming the header, nothing billed', async () => {
    const key = await createKey(setup.url, admin(), { remain_quota: 5_000_000 });
    const result = await rawExchange(setup.gateway.port, [request(ROUTES[1],
      `authorization: Bearer ${key.key}\r\ncontent-type: multipart/form-data; boundary=other\r\ncontent-type: ${ROUTES[1].contentType}\r\n`)], 3_000);
    const answer = parseRawAnswer(result.text);
    assert.equal(answer.status, 400, result.text.slice(0, 300));
    assert.match(dialectMessage(answer.body, 'openai'), /more than one Content-Type header/);
    assert.equal(setup.mock.requests.length, 0);
    assert.equal(await settled('two content types'), 0);
  });

  test('one Authorization and one x-api-key: served on every route and charged to the Authorization key', async () => {
    const first = await createKey(setup.url, admin(), { name: 'bearer', remain_quota: 5_000_000 });
    const second = await createKey(setup.url, admin(), { name: 'x-api-key', remain_quota: 5_000_000 });
    for (const route of ROUTES) {
      const result = await rawExchange(setup.gateway.port, [request(route,
        `authorization: Bearer ${first.key}\r\nx-api-key: ${second.key}\r\ncontent-type: ${route.contentType}\r\nconnection: close\r\n`)], 5_000);
      assert.equal(parseRawAnswer(result.text).status, 200, `${route.label}: ${result.text.slice(0, 300)}`);
    }
    const charged = await settled('one of each');
    assert.ok(charged > 0);
    assert.equal(await used(first.id), charged, 'every call charged to the Authorization key');
    assert.equal(await used(second.id), 0);
    assert.equal((await store().usage.list(1, { keyId: first.id }, 0, 100)).total, ROUTES.length, 'one usage record per call');
  });
});
