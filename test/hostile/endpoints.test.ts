// Hostile input on /v1/embeddings, /v1/completions and /v1/responses (both fronts): malformed and
// deeply nested JSON, wrong types, huge inputs, and clients that leave; every scenario ends with the
// money invariants (test/helpers/money.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { call, FRONTS } from '../helpers/gateway';
import { createKey, eventually, flushCharges } from '../integration/chat-harness';
import { endpointsSuite } from '../integration/endpoints-harness';

/** `depth` nested arrays as JSON text, built without recursion. */
const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

for (const front of FRONTS) describe(`hostile input on the OpenAI endpoints beyond chat (${front} front)`, () => {
  const suite = endpointsSuite({ front, remainQuota: 2_000_000 });
  const { records, settled } = suite;
  const post = (path: string, rawBody: string) => call(suite.setup.url, 'POST', path, { token: `Bearer ${suite.key.key}`, rawBody });

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
    assert.equal(suite.setup.mock.requests.length, 0);
    assert.equal(await settled('embeddings garbage'), 0);
  });

  test('embeddings: 2,048 inputs of 2 KB each are served and billed within the reservation', async () => {
    const input = Array.from({ length: 2048 }, (_, index) => `${index} ${'lorem ipsum dolor sit amet '.repeat(75)}`);
    const answer = await post('/v1/embeddings', JSON.stringify({ model: 'mock-embedding', input, encoding_format: 'base64' }));
    assert.equal(answer.status, 200, answer.text.slice(0, 300));
    assert.equal(answer.json.data.length, 2048);
    await flushCharges(suite.setup);
    assert.equal((await records())[0].prompt_tokens, answer.json.usage.prompt_tokens);
    await settled('many inputs');
  });

  test('embeddings: a body past the model body limit is a 413, nothing billed', async () => {
    const input = 'x'.repeat(33 * 1024 * 1024);
    const answer = await post('/v1/embeddings', JSON.stringify({ model: 'mock-embedding', input }));
    assert.equal(answer.status, 413, answer.text.slice(0, 200));
    assert.equal(await settled('too large'), 0);
  });

  test('embeddings: a client gone while the upstream is silent is noticed at once, recorded, nothing charged', async () => {
    suite.setup.mock.script({ delayHeadersMs: 5000 });
    const controller = new AbortController();
    const pending = fetch(`${suite.setup.url}/v1/embeddings`, {
      method: 'POST', signal: controller.signal,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${suite.key.key}` },
      body: JSON.stringify({ model: 'mock-embedding', input: 'hello' }),
    }).catch(() => undefined);
    await eventually(() => suite.setup.mock.requests.length === 1, 2000, 'the upstream request');
    controller.abort();
    await pending;
    await eventually(() => suite.setup.mock.requests[0].aborted, 1500, 'the upstream request aborted');
    await eventually(async () => { await flushCharges(suite.setup); return (await records())[0]?.end_reason === 'client_gone'; }, 1500, 'the usage record');
    assert.equal((await records())[0].quota, 0);
    await settled('embeddings client gone');
  });
  for (const [path, model] of [['/v1/completions', 'mock-chat'], ['/v1/responses', 'mock-chat'], ['/v1/responses', 'anthropic-chat']] as const) {
    const field = path === '/v1/completions' ? 'prompt' : 'input';
    test(`${path} (${model}): malformed JSON, wrong types, deep nesting are 400s naming the problem`, async () => {
      const bodies: string[] = [
        `{"model":"${model}","${field}":"x"`,
        `{"model":"${model}","${field}":"x","stream":"true"}`,
        `{"model":"${model}","${field}":null}`,
        `{"model":"${model}","${field}":[{"role":"user","content":7}]}`,
        `{"model":"${model}","${field}":"x","max_tokens":1e400,"max_output_tokens":1e400}`,
        `{"model":"${model}","${field}":${nested(50_000)}}`,
        `{"model":"${model}","${field}":"x","tools":[{"type":"function","name":"f","parameters":${nested(50_000)}}]}`,
        `{"model":"${model}","${field}":"x","extra":{"a":${nested(50_000)}}}`,
      ];
      for (const body of bodies) {
        const answer = await post(path, body);
        assert.ok(answer.status >= 400 && answer.status < 500, `${body.slice(0, 90)} → ${answer.status} ${answer.text.slice(0, 200)}`);
        assert.equal(typeof answer.json?.error?.message, 'string', answer.text.slice(0, 200));
      }
      assert.equal(suite.setup.mock.requests.length, 0);
      assert.equal(await settled(`${path} garbage`), 0);
    });

    test(`${path} (${model}): a client gone mid-stream aborts the upstream; billed for what was delivered, within the reservation`, async () => {
      suite.setup.mock.script({ silenceAfterChunks: 3, silenceMs: 5000 });
      const controller = new AbortController();
      const response = await fetch(`${suite.setup.url}${path}`, {
        method: 'POST', signal: controller.signal,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${suite.key.key}` },
        body: JSON.stringify({ model, [field]: 'hello', stream: true, max_tokens: 50, ...(path === '/v1/responses' ? { max_output_tokens: 50, max_tokens: undefined } : {}) }),
      });
      assert.equal(response.status, 200);
      const reader = response.body!.getReader();
      await reader.read();
      controller.abort();
      // the call ends (and is billed) when the client goes; the upstream request is aborted with it
      await eventually(async () => { await flushCharges(suite.setup); return (await records())[0]?.end_reason === 'client_gone'; }, 2000, 'the usage record');
      await eventually(() => suite.setup.mock.requests[0]?.aborted === true, 10_000, 'the upstream request aborted');
      const record = (await records())[0];
      assert.equal(record.usage_source, 'estimated');
      assert.ok(record.completion_tokens < 20, `billed ${record.completion_tokens} completion tokens`);
      await settled(`${path} client gone`);
    });
  }

  test('responses: a huge input (2,000 items, 8 MB) is served and billed within the reservation; a cap too small refuses it up front', async () => {
    const input = Array.from({ length: 2000 }, (_, index) => ({ role: index % 2 === 0 ? 'user' : 'assistant', content: `${index} ${'word '.repeat(800)}` }));
    const body = JSON.stringify({ model: 'mock-chat', input, max_output_tokens: 5 });
    assert.ok(body.length > 8_000_000);
    const answer = await post('/v1/responses', body);
    assert.equal(answer.status, 200, answer.text.slice(0, 300));
    await flushCharges(suite.setup);
    assert.equal((await records())[0].prompt_tokens, answer.json.usage.input_tokens);
    const small = await createKey(suite.setup.url, suite.setup.gateway.adminToken, { remain_quota: 100 });
    const refused = await call(suite.setup.url, 'POST', '/v1/responses', { token: `Bearer ${small.key}`, rawBody: body });
    assert.equal(refused.status, 429);
    assert.equal(refused.json.error.code, 'insufficient_quota');
    await settled('huge responses input');
  });

  test('responses and completions: an upstream reporting absurd usage is billed at the bound, never past the cap', async () => {
    const capped = await createKey(suite.setup.url, suite.setup.gateway.adminToken, { remain_quota: 3000 });
    for (const [path, body] of [
      ['/v1/responses', { model: 'mock-chat', input: 'hi', max_output_tokens: 20 }],
      ['/v1/completions', { model: 'mock-chat', prompt: 'hi', max_tokens: 20 }],
      ['/v1/responses', { model: 'mock-chat', input: 'hi', max_output_tokens: 20, stream: true }],
    ] as const) {
      suite.setup.mock.script({ usageOverride: { prompt_tokens: 1_000_000_000, completion_tokens: 1_000_000_000 } });
      const answer = await call(suite.setup.url, 'POST', path, { token: `Bearer ${capped.key}`, body });
      assert.equal(answer.status, 200, answer.text.slice(0, 200));
    }
    const charged = await settled('absurd usage');
    assert.ok(charged <= 3000, `charged ${charged} on a 3,000 cap`);
    const own = (await suite.store().usage.list(1, { keyId: capped.id }, 0, 100)).items;
    assert.ok(own.every((record) => record.completion_tokens <= 20), own.map((record) => record.completion_tokens).join(','));
  });
});

for (const front of FRONTS) describe(`streams past their bound on the OpenAI endpoints beyond chat (${front} front)`, () => {
  const suite = endpointsSuite({ front, chunks: 3000 });

  for (const [path, body] of [
    ['/v1/responses', { model: 'mock-chat', input: 'hi', max_output_tokens: 50, stream: true }],
    ['/v1/completions', { model: 'mock-chat', prompt: 'hi', max_tokens: 50, stream: true }],
  ] as const) {
    test(`${path}: an upstream that ignores the output cap is cut off, says why, and is billed within the bound`, async () => {
      suite.setup.mock.script({ ignoreMaxTokens: true });
      const answer = await call(suite.setup.url, 'POST', path, { token: `Bearer ${suite.key.key}`, body });
      assert.equal(answer.status, 200);
      const events = answer.text.split('\n\n').filter((block) => block.includes('data:'));
      assert.ok(events.length < 3000, `cut off after ${events.length} events`);
      assert.match(events.at(-1)!, /insufficient_quota/, answer.text.slice(-300));
      const record = await suite.lastRecord();
      assert.equal(record.end_reason, 'quota_bounded');
      assert.ok(record.completion_tokens <= 50, `billed ${record.completion_tokens} completion tokens`);
      await suite.settled(`${path} cut`);
    });
  }
});
