// Hostile input on /v1/embeddings, /v1/completions and /v1/responses (both fronts): malformed and
// deeply nested JSON, wrong types, huge inputs, and clients that leave; every scenario ends with the
// money invariants (test/helpers/money.ts).
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { call, FRONTS } from '../helpers/gateway';
import { assertMoneyInvariants, moneySnapshot, type MoneySnapshot } from '../helpers/money';
import { createKey, eventually, flushCharges, type ChatSetup } from '../integration/chat-harness';
import { startEndpointsSetup } from '../integration/endpoints-harness';

/** `depth` nested arrays as JSON text, built without recursion. */
const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

for (const front of FRONTS) describe(`hostile input on the OpenAI endpoints beyond chat (${front} front)`, () => {
  let setup: ChatSetup;
  let key: { id: number; key: string };
  let before0: MoneySnapshot;
  const store = () => setup.gateway.gateway.context.store;
  const records = () => store().usage.list(1, { keyId: key.id }, 0, 1000).items;

  before(async () => {
    setup = await startEndpointsSetup({ front });
    await store().accounts.topUp(1, 100_000_000);
    key = await createKey(setup.url, setup.gateway.adminToken, { remain_quota: 2_000_000 });
  });
  after(async () => { await setup?.close(); });
  beforeEach(async () => {
    setup.mock.reset();
    await flushCharges(setup);
    before0 = moneySnapshot(store());
  });
  const settled = async (label: string) => { await flushCharges(setup); return assertMoneyInvariants(store(), before0, label); };
  const post = (path: string, rawBody: string) => call(setup.url, 'POST', path, { token: `Bearer ${key.key}`, rawBody });

  test('embeddings: malformed JSON, wrong types and deep nesting are 400s naming the problem, never a 500', async () => {
    const bodies: Array<[string, RegExp]> = [
      ['{"model":"mock-embedding","input":"x"', /not valid JSON/],
      ['[]', /JSON object/],
      ['"text"', /JSON object/],
      ['{"model":7,"input":"x"}', /model/],
      ['{"model":"mock-embedding","input":null}', /input/],
      ['{"model":"mock-embedding","input":[1.5]}', /token id/],
      ['{"model":"mock-embedding","input":["a",["b"]]}', /token id/],
      ['{"model":"mock-embedding","input":"x","dimensions":"4"}', /dimensions/],
      ['{"model":"mock-embedding","input":"x","user":{}}', /user/],
      [`{"model":"mock-embedding","input":${nested(50_000)}}`, /./],
      [`{"model":"mock-embedding","input":"x","extra":${nested(50_000)}}`, /./],
    ];
    for (const [body, message] of bodies) {
      const answer = await post('/v1/embeddings', body);
      assert.ok(answer.status >= 400 && answer.status < 500, `${body.slice(0, 80)} → ${answer.status} ${answer.text.slice(0, 200)}`);
      assert.equal(typeof answer.json?.error?.message, 'string', answer.text.slice(0, 200));
      assert.match(answer.json.error.message, message);
    }
    assert.equal(setup.mock.requests.length, 0);
    assert.equal(await settled('embeddings garbage'), 0);
  });

  test('embeddings: 2,048 inputs of 2 KB each are served and billed within the reservation', async () => {
    const input = Array.from({ length: 2048 }, (_, index) => `${index} ${'lorem ipsum dolor sit amet '.repeat(75)}`);
    const answer = await post('/v1/embeddings', JSON.stringify({ model: 'mock-embedding', input, encoding_format: 'base64' }));
    assert.equal(answer.status, 200, answer.text.slice(0, 300));
    assert.equal(answer.json.data.length, 2048);
    await flushCharges(setup);
    assert.equal(records()[0].prompt_tokens, answer.json.usage.prompt_tokens);
    await settled('many inputs');
  });

  test('embeddings: a body past the model body limit is a 413, nothing billed', async () => {
    const input = 'x'.repeat(33 * 1024 * 1024);
    const answer = await post('/v1/embeddings', JSON.stringify({ model: 'mock-embedding', input }));
    assert.equal(answer.status, 413, answer.text.slice(0, 200));
    assert.equal(await settled('too large'), 0);
  });

  test('embeddings: a client gone while the upstream is silent is noticed at once, recorded, nothing charged', async () => {
    setup.mock.script({ delayHeadersMs: 5000 });
    const controller = new AbortController();
    const pending = fetch(`${setup.url}/v1/embeddings`, {
      method: 'POST', signal: controller.signal,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key.key}` },
      body: JSON.stringify({ model: 'mock-embedding', input: 'hello' }),
    }).catch(() => undefined);
    await eventually(() => setup.mock.requests.length === 1, 2000, 'the upstream request');
    controller.abort();
    await pending;
    await eventually(() => setup.mock.requests[0].aborted, 1500, 'the upstream request aborted');
    await eventually(async () => { await flushCharges(setup); return records()[0]?.end_reason === 'client_gone'; }, 1500, 'the usage record');
    assert.equal(records()[0].quota, 0);
    await settled('embeddings client gone');
  });
});
