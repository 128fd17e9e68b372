// Issue 21 items 10 and 11: a body over its limit reaches Node's fetch and the official openai SDK as
// a 413 with its message (the rest of the body is read and dropped, up to a bound, before the
// connection may close), and a malformed multipart request leaves nothing behind that breaks the next
// image edit on the same worker.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import OpenAI, { toFile } from 'openai';
import { startMockUpstream, type MockUpstream } from '../../scripts/mock-upstream';
import { EMBEDDED_CONFIG } from '../../src/config';
import { call, FRONTS, parseRawAnswer, rawExchange, startTestGateway, type TestGateway } from '../helpers/gateway';
import { assertMoneyInvariants, moneySnapshot } from '../helpers/money';

const MULTIPART_LIMIT = 4 * 1024 * 1024;
const MODEL_BODY_LIMIT = 2 * 1024 * 1024;
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAAC0lEQVR4nGNgAAIAAAUAAXpeqz8AAAAASUVORK5CYII=', 'base64');

function testConfig(mockUrl: string): Record<string, unknown> {
  return {
    ...EMBEDDED_CONFIG,
    models: [...EMBEDDED_CONFIG.models, { id: 'mock-image', kind: 'image', price: { per_call: 0.04 } }],
    channels: [
      ...EMBEDDED_CONFIG.channels,
      { name: 'mock', type: 'openai', base_url: mockUrl, keys: ['mock-key'], models: ['mock-image'] },
    ],
    limits: { multipart_bytes: MULTIPART_LIMIT, model_body_bytes: MODEL_BODY_LIMIT },
  };
}

async function createKey(gateway: TestGateway): Promise<string> {
  const created = await call(gateway.url, 'POST', '/api/token/', { token: gateway.adminToken, body: { name: 'bodies', unlimited_quota: true } });
  const revealed = await call(gateway.url, 'POST', `/api/token/${created.json.data.id}/key`, { token: gateway.adminToken });
  return revealed.json.data.key;
}

/**
 * Writes `head`, then `total` body bytes in 64 KiB writes, each after the last was flushed, and only
 * then reads (as a client busy sending does): what the server answered, and the first write error.
 */
function uploadThenRead(port: number, head: string, total: number): Promise<{ text: string; sent: number; writeError?: string }> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    const parts: Buffer[] = [];
    let writeError: string | undefined;
    let sent = 0;
    const timer = setTimeout(() => socket.destroy(), 20_000);
    socket.pause();
    socket.on('data', (chunk: Buffer) => parts.push(chunk));
    socket.on('error', (error: NodeJS.ErrnoException) => { writeError ??= error.code ?? error.message; });
    socket.on('close', () => { clearTimeout(timer); resolve({ text: Buffer.concat(parts).toString('latin1'), sent, writeError }); });
    socket.on('connect', async () => {
      socket.write(head);
      const chunk = Buffer.alloc(64 * 1024, 0x78);
      while (sent < total && !socket.destroyed) {
        const size = Math.min(chunk.length, total - sent);
        const failed = await new Promise<boolean>((done) => socket.write(chunk.subarray(0, size), (error) => done(Boolean(error))));
        if (failed) break;
        sent += size;
      }
      socket.resume();
      setTimeout(() => socket.end(), 500);
    });
  });
}

async function apiError(promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try { await promise; } catch (error) {
    assert.ok(error instanceof OpenAI.APIError, `expected an API error, got ${String(error)} (${String((error as Error).cause ?? '')})`);
    return error;
  }
  assert.fail('the call succeeded but should have failed');
}

for (const front of FRONTS) {
  describe(`bodies over their limit, malformed multipart (${front} front)`, () => {
    let mock: MockUpstream;
    let gateway: TestGateway;
    let key: string;
    let client: OpenAI;

    before(async () => {
      mock = await startMockUpstream();
      gateway = await startTestGateway({ front, raw: testConfig(mock.url) });
      await gateway.gateway.context.store.accounts.topUp(1, 500_000_000);
      key = await createKey(gateway);
      client = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
    });
    after(async () => { await gateway?.close(); await mock?.close(); });

    /** An image edit whose multipart body is written by hand. */
    const postForm = (boundary: string, body: Buffer) => call(gateway.url, 'POST', '/v1/images/edits', {
      token: `Bearer ${key}`, rawBody: body, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    });
    /** The scenario's charges committed, then the money invariants since `before0`. */
    const moneyHolds = async (before0: Awaited<ReturnType<typeof moneySnapshot>>, label: string) => {
      await gateway.gateway.context.ledger.flush();
      await assertMoneyInvariants(gateway.gateway.context.store, before0, label);
    };

    test('the openai SDK sees the 413 of an image edit over the multipart limit, with its message', async () => {
      for (const size of [MULTIPART_LIMIT + 1024 * 1024, 3 * MULTIPART_LIMIT]) {
        const error = await apiError(client.images.edit({ model: 'mock-image', prompt: 'a boat', image: await toFile(Buffer.alloc(size, 7), 'big.png', { type: 'image/png' }) }));
        assert.equal(error.status, 413, `${size} bytes: ${error.message}`);
        assert.match(error.message, new RegExp(`${MULTIPART_LIMIT}-byte limit`));
      }
      // and the connection pool is fine afterwards
      const edited = await client.images.edit({ model: 'mock-image', prompt: 'a boat', image: await toFile(PNG, 'small.png', { type: 'image/png' }) });
      assert.equal(edited.data!.length, 1);
    });

    test('fetch sees the 413 of a chat body over the model body limit, with its message', async () => {
      for (const size of [MODEL_BODY_LIMIT + 100_000, 4 * MODEL_BODY_LIMIT]) {
        const body = JSON.stringify({ model: 'sim-gpt-mini', messages: [{ role: 'user', content: 'x'.repeat(size) }] });
        const response = await fetch(`${gateway.url}/v1/chat/completions`, {
          method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body,
        });
        assert.equal(response.status, 413);
        const answer = await response.json() as { error: { message: string; code: string } };
        assert.match(answer.error.message, new RegExp(`${MODEL_BODY_LIMIT}-byte limit`));
        assert.equal(answer.error.code, 'payload_too_large');
      }
    });

    test('a client that writes its whole body before reading sees the 413, its writes never cut off', async () => {
      for (const over of [1, 8, 24]) {
        const total = MODEL_BODY_LIMIT + over * 1024 * 1024;
        const result = await uploadThenRead(gateway.port,
          `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: ${total}\r\n\r\n`, total);
        assert.equal(result.writeError, undefined, `${over} MiB over: a write failed after ${result.sent} bytes`);
        assert.equal(result.sent, total);
        const answer = parseRawAnswer(result.text);
        assert.equal(answer.status, 413, result.text.slice(0, 200));
        assert.match(JSON.parse(answer.body).error.message, new RegExp(`${MODEL_BODY_LIMIT}-byte limit`));
      }
    });

    test('a declared length far past any bound is refused at once and the connection closed', async () => {
      const result = await rawExchange(gateway.port, [
        `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: ${512 * 1024 * 1024}\r\n\r\n{"model":`,
      ], 5_000);
      assert.equal(parseRawAnswer(result.text).status, 413, result.text);
      assert.equal(result.closed, true);
    });

    test('70 fields and a cut-off file part (413), then a valid edit on the same worker: the edit succeeds, five times over', async () => {
      const before0 = await moneySnapshot(gateway.gateway.context.store);
      for (let round = 0; round < 5; round += 1) {
        const boundary = `----hostile${round}`;
        const fields = Array.from({ length: 70 }, (_, index) => `--${boundary}\r\ncontent-disposition: form-data; name="field${index}"\r\n\r\nvalue ${index}\r\n`).join('');
        const cut = `${fields}--${boundary}\r\ncontent-disposition: form-data; name="image"; filename="a.png"\r\ncontent-type: image/png\r\n\r\n${'p'.repeat(5000)}`;
        const refused = await fetch(`${gateway.url}/v1/images/edits`, {
          method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}` }, body: cut,
        });
        assert.ok(refused.status === 413 || refused.status === 400, `round ${round}: ${refused.status} ${await refused.clone().text()}`);
        assert.match(((await refused.json()) as { error: { message: string } }).error.message, /field|part|multipart|form/i);
        const edited = await client.images.edit({ model: 'mock-image', prompt: 'a boat', image: await toFile(PNG, 'a.png', { type: 'image/png' }) });
        assert.equal(edited.data!.length, 1, `round ${round}`);
      }
      await moneyHolds(before0, 'multipart pairs');
    });

    test('a form field whose content-type names a charset that cannot be decoded is a 400 naming the field, not a 500; nothing billed', async () => {
      mock.reset();
      const before0 = await moneySnapshot(gateway.gateway.context.store);
      const boundary = '----charset';
      const field = (name: string, value: string, charset?: string) => `--${boundary}\r\ncontent-disposition: form-data; name="${name}"\r\n`
        + `${charset === undefined ? '' : `content-type: text/plain; charset=${charset}\r\n`}\r\n${value}\r\n`;
      const image = Buffer.concat([
        Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="image"; filename="a.png"\r\ncontent-type: image/png\r\n\r\n`), PNG, Buffer.from('\r\n'),
      ]);
      for (const [name, charset] of [['size', 'bogus'], ['prompt', 'x-unknown-charset'], ['model', 'x-bogus-2'], ['image', 'no-such-charset']]) {
        const parts = [field('model', 'mock-image'), field('prompt', 'a boat'), field(name, name === 'image' ? 'https://example.com/a.png' : '1024x1024', charset)];
        const body = Buffer.concat([Buffer.from(parts.join('')), image, Buffer.from(`--${boundary}--\r\n`)]);
        const answer = await postForm(boundary, body);
        assert.equal(answer.status, 400, `${name} (${charset}): ${answer.text.slice(0, 300)}`);
        assert.equal(answer.json.error.type, 'invalid_request_error', answer.text);
        assert.equal(answer.json.error.param, name, answer.text);
        assert.match(answer.json.error.message, new RegExp(`form field ${name} could not be decoded.*charset`), answer.text);
      }
      assert.equal(mock.requests.length, 0, 'no upstream call');
      // a charset busboy does decode is still read
      const latin = Buffer.concat([Buffer.from(field('model', 'mock-image') + field('prompt', 'a boat', 'iso-8859-1')), image, Buffer.from(`--${boundary}--\r\n`)]);
      const served = await postForm(boundary, latin);
      assert.equal(served.status, 200, served.text.slice(0, 300));
      await moneyHolds(before0, 'undecodable charset');
    });

    test('a part header past busboy\'s 16 KiB limit (a 20,000-character file name) is a 400 that names the limit', async () => {
      mock.reset();
      const before0 = await moneySnapshot(gateway.gateway.context.store);
      const boundary = '----longname';
      const body = Buffer.concat([
        Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="model"\r\n\r\nmock-image\r\n--${boundary}\r\ncontent-disposition: form-data; name="prompt"\r\n\r\na boat\r\n`),
        Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="image"; filename="${'n'.repeat(20_000)}.png"\r\ncontent-type: image/png\r\n\r\n`), PNG,
        Buffer.from(`\r\n--${boundary}--\r\n`),
      ]);
      const answer = await postForm(boundary, body);
      assert.equal(answer.status, 400, answer.text.slice(0, 300));
      assert.equal(answer.json.error.type, 'invalid_request_error');
      assert.match(answer.json.error.message, /16384-byte part header limit/);
      assert.equal(mock.requests.length, 0, 'no upstream call');
      await moneyHolds(before0, 'long part header');
    });
  });
}
