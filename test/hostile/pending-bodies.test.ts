// Request bodies still arriving are bounded in sum (limits.pending_body_bytes), on both fronts: many
// slow uploads at once cannot hold a worker's memory. The upload whose bytes would pass the bound is
// refused with a 503 in the endpoint's shape naming the limit, its connection closed; the uploads
// already held are served whole and billed; the worker serves the next call; the money invariants hold.
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { EMBEDDED_CONFIG } from '../../src/config';
import { call, FRONTS, parseRawAnswer, startTestGateway, type TestGateway } from '../helpers/gateway';
import { assertMoneyInvariants, moneySnapshot } from '../helpers/money';

const PENDING_LIMIT = 512 * 1024;
const MODEL_BODY_LIMIT = 256 * 1024;

function chatBody(bytes: number): Buffer {
  const head = '{"model":"sim-gpt-mini","max_tokens":8,"messages":[{"role":"user","content":"';
  const tail = '"}]}';
  return Buffer.from(head + 'x'.repeat(bytes - head.length - tail.length) + tail);
}

/** An upload held part-way: its head and the first `sent` body bytes are written, the rest on `finish()`. */
interface HeldUpload { answer: Promise<{ text: string }>; finish(): void; socket: Socket }

function heldUpload(port: number, key: string, body: Buffer, sent: number): HeldUpload {
  const socket = connect({ host: '127.0.0.1', port });
  const parts: Buffer[] = [];
  const answer = new Promise<{ text: string }>((resolve) => {
    const timer = setTimeout(() => socket.destroy(), 15_000);
    socket.on('data', (chunk: Buffer) => parts.push(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => { clearTimeout(timer); resolve({ text: Buffer.concat(parts).toString('latin1') }); });
  });
  socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\n`
    + `connection: close\r\ncontent-length: ${body.length}\r\n\r\n`);
  socket.write(body.subarray(0, sent));
  return { answer, socket, finish: () => { if (!socket.destroyed) socket.write(body.subarray(sent)); } };
}

for (const front of FRONTS) {
  describe(`request bodies still arriving, bounded in sum (${front} front)`, () => {
    let gateway: TestGateway;
    let key: string;
    let keyId: number;

    before(async () => {
      gateway = await startTestGateway({
        front,
        raw: { ...EMBEDDED_CONFIG, limits: { api_body_bytes: 64 * 1024, model_body_bytes: MODEL_BODY_LIMIT, multipart_bytes: MODEL_BODY_LIMIT, pending_body_bytes: PENDING_LIMIT } },
      });
      await gateway.gateway.context.store.accounts.topUp(1, 500_000_000);
      const created = await call(gateway.url, 'POST', '/api/token/', { token: gateway.adminToken, body: { name: 'pending', unlimited_quota: true } });
      keyId = created.json.data.id;
      key = (await call(gateway.url, 'POST', `/api/token/${keyId}/key`, { token: gateway.adminToken })).json.data.key;
    });
    after(async () => { await gateway?.close(); });

    test('a third held upload past the sum is a 503 naming the limit, its connection closed; the two held ones are served and billed', async () => {
      const before0 = await moneySnapshot(gateway.gateway.context.store);
      const body = chatBody(200 * 1024);
      const held = 190 * 1024;
      const first = heldUpload(gateway.port, key, body, held);
      const second = heldUpload(gateway.port, key, body, held);
      await sleep(500);
      const third = heldUpload(gateway.port, key, body, held);
      const refused = await Promise.race([third.answer, sleep(5_000).then(() => ({ text: 'no answer within 5 s' }))]);
      const parsed = parseRawAnswer(refused.text);
      assert.equal(parsed.status, 503, refused.text.slice(0, 400));
      const error = JSON.parse(parsed.body).error as { code: string; type: string; message: string };
      assert.equal(error.code, 'server_busy');
      assert.equal(error.type, 'api_error');
      assert.match(error.message, new RegExp(`${PENDING_LIMIT}-byte limit`));
      assert.ok(third.socket.destroyed || third.socket.readableEnded, 'the refused upload\'s connection is closed');

      first.finish();
      second.finish();
      for (const [name, upload] of [['first', first], ['second', second]] as const) {
        const answer = parseRawAnswer((await upload.answer).text);
        assert.equal(answer.status, 200, `${name}: ${answer.body.slice(0, 300)}`);
        const completion = JSON.parse(answer.body) as { object: string; usage: { prompt_tokens: number } };
        assert.equal(completion.object, 'chat.completion');
        assert.ok(completion.usage.prompt_tokens > 1000, `${name}: the whole prompt was read`);
      }

      // the worker serves the next call, and a held upload's share was given back
      const next = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: chatBody(200 * 1024).toString(),
      });
      assert.equal(next.status, 200, await next.clone().text());
      await gateway.gateway.context.ledger.flush();
      const records = await gateway.gateway.context.store.usage.list(1, { keyId }, 0, 100);
      assert.equal(records.items.length, 3, 'one record for each served call, none for the refused upload');
      const charged = await assertMoneyInvariants(gateway.gateway.context.store, before0, 'pending bodies');
      assert.ok(charged > 0);
    });

    test('uploads that leave part-way give their share back: the bound is not used up by clients gone', async () => {
      const body = chatBody(200 * 1024);
      for (let round = 0; round < 4; round += 1) {
        const uploads = [heldUpload(gateway.port, key, body, 190 * 1024), heldUpload(gateway.port, key, body, 190 * 1024)];
        await sleep(300);
        for (const upload of uploads) upload.socket.destroy();
        await Promise.all(uploads.map((upload) => upload.answer));
      }
      await sleep(300);
      const served = await Promise.all([0, 1].map(() => fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: chatBody(200 * 1024).toString(),
      })));
      assert.deepEqual(served.map((answer) => answer.status), [200, 200]);
    });
  });
}
