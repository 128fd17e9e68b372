// Error messages that quote a client's value, on both fronts: a value of 150,000 characters is named
// by a bounded excerpt, so an error answer never grows with the request. These fields were quoted
// whole (the video API's model twice: in message and details.reason), an answer as large as the
// body that carried it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { call, FRONTS, startTestGateway, type TestGateway } from '../helpers/gateway';
import { createKey } from '../integration/chat-harness';

const LONG = 'z'.repeat(150_000);
const MAX_ANSWER_BYTES = 2000;

const CASES: [string, Record<string, unknown>, string][] = [
  ['/v1/images/generations', { model: 'sim-image', prompt: 'a boat', size: LONG }, 'size'],
  ['/v1/images/generations', { model: 'sim-image', prompt: 'a boat', quality: LONG }, 'quality'],
  ['/v1/images/generations', { model: 'sim-image', prompt: 'a boat', style: LONG }, 'style'],
  ['/v1/responses', { model: 'sim-gpt-mini', input: [{ type: LONG }] }, 'input[0]'],
  ['/v1/responses', { model: 'sim-gpt-mini', input: 'hi', tools: [{ type: LONG }] }, 'tools[0]'],
  ['/v1/responses', { model: 'sim-gpt-mini', input: 'hi', tool_choice: { type: LONG } }, 'tool_choice'],
  ['/veo/v1/api/video/submit', { model: LONG, prompt: 'a coast' }, 'model'],
];

for (const front of FRONTS) {
  describe(`errors quoting a huge client value stay small (${front} front)`, () => {
    let gateway: TestGateway;
    let key: string;
    before(async () => {
      gateway = await startTestGateway({ front });
      await gateway.gateway.context.store.accounts.topUp(1, 100_000_000);
      key = (await createKey(gateway.url, gateway.adminToken, { unlimited_quota: true })).key;
    });
    after(async () => { await gateway?.close(); });

    test('a 150,000-character value is a 400 naming the field with a bounded excerpt of it', async () => {
      for (const [path, body, field] of CASES) {
        const answer = await call(gateway.url, 'POST', path, { token: `Bearer ${key}`, body });
        const label = `${path} ${field}`;
        assert.equal(answer.status, 400, `${label}: ${answer.text.slice(0, 200)}`);
        assert.ok(answer.text.length < MAX_ANSWER_BYTES, `${label}: a ${answer.text.length}-byte answer`);
        const message: string = path.startsWith('/veo/') ? answer.json.message : answer.json.error.message;
        assert.ok(message.includes(field), `${label}: ${message}`);
        assert.match(message, /zzzz/, `${label}: the value is quoted in part`);
      }
    });
  });
}
