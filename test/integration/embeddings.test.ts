// POST /v1/embeddings through the simulator and an OpenAI-compatible channel (the mock upstream):
// the openai SDK's embeddings.create (float and base64), token-array inputs, dimensions passed
// through, usage shown equal to the usage record, billing per input token, errors in OpenAI's shape.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import OpenAI from 'openai';
import { call } from '../helpers/gateway';
import { client, createKey, expectApiError, flushCharges } from './chat-harness';
import { endpointsSuite, inputOnlyQuota } from './endpoints-harness';

describe('POST /v1/embeddings', () => {
  const suite = endpointsSuite({ remainQuota: 5_000_000 });
  const { records, lastRecord, settled } = suite;

  test('the SDK default (it asks for base64 and decodes): simulator vectors, deterministic, usage = the record', async () => {
    const sdk = client(suite.setup.url, suite.key.key);
    const first = await sdk.embeddings.create({ model: 'sim-embedding', input: ['the quick brown fox', 'jumps over'] });
    assert.equal(first.object, 'list');
    assert.equal(first.model, 'sim-embedding');
    assert.equal(first.data.length, 2);
    assert.deepEqual(first.data.map((item) => item.index), [0, 1]);
    assert.equal(first.data[0].embedding.length, 1536);
    const norm = Math.sqrt(first.data[0].embedding.reduce((sum, value) => sum + value * value, 0));
    assert.ok(Math.abs(norm - 1) < 1e-3, `unit vector, norm ${norm}`);
    const again = await sdk.embeddings.create({ model: 'sim-embedding', input: 'the quick brown fox' });
    assert.deepEqual(again.data[0].embedding, first.data[0].embedding, 'the same input gives the same vector');
    await flushCharges(suite.setup);
    const [latest, earlier] = await records();
    assert.equal(earlier.endpoint, 'embeddings');
    assert.equal(earlier.prompt_tokens, first.usage.prompt_tokens);
    assert.equal(earlier.completion_tokens, 0);
    assert.equal(earlier.usage_source, 'upstream');
    assert.equal(earlier.quota, inputOnlyQuota(0.02, first.usage.prompt_tokens));
    assert.equal(latest.prompt_tokens, again.usage.prompt_tokens);
    assert.equal(first.usage.total_tokens, first.usage.prompt_tokens);
    await settled('sdk default');
  });

  test('encoding_format float with dimensions on an OpenAI-compatible channel: passed through, billed per input token', async () => {
    const sdk = client(suite.setup.url, suite.key.key);
    const answer = await sdk.embeddings.create({ model: 'mock-embedding', input: ['abcdefgh', 'abcd'], encoding_format: 'float', dimensions: 4 });
    const sent = suite.setup.mock.requests[0];
    assert.equal(sent.path, '/v1/embeddings');
    assert.deepEqual(sent.body, { model: 'mock-embedding', input: ['abcdefgh', 'abcd'], encoding_format: 'float', dimensions: 4 });
    assert.equal(answer.data[1].embedding.length, 4);
    assert.ok(answer.data[1].embedding.every((value) => typeof value === 'number'));
    // the mock counts ceil(characters / 4) per input: 2 + 1
    assert.deepEqual(answer.usage, { prompt_tokens: 3, total_tokens: 3 });
    const record = await lastRecord();
    assert.equal(record.prompt_tokens, 3);
    assert.equal(record.channel, 'mock');
    assert.equal(record.quota, inputOnlyQuota(0.13, 3));
    await settled('float');
  });

  test('encoding_format base64: the vector comes as little-endian float32 bytes', async () => {
    const sdk = client(suite.setup.url, suite.key.key);
    const answer = await sdk.embeddings.create({ model: 'mock-embedding', input: 'abcd', encoding_format: 'base64', dimensions: 3 });
    const encoded = answer.data[0].embedding as unknown as string;
    assert.equal(typeof encoded, 'string');
    const bytes = Buffer.from(encoded, 'base64');
    const vector = Array.from({ length: bytes.length / 4 }, (_, index) => bytes.readFloatLE(index * 4));
    assert.deepEqual(vector, [1 / 1024, 2 / 1024, 3 / 1024]);
    const raw = await call(suite.setup.url, 'POST', '/v1/embeddings', {
      token: `Bearer ${suite.key.key}`, body: { model: 'sim-embedding', input: 'hello', encoding_format: 'base64', dimensions: 16 },
    });
    assert.equal(raw.status, 200, raw.text);
    assert.equal(Buffer.from(raw.json.data[0].embedding, 'base64').length, 16 * 4);
    await settled('base64');
  });

  test('token-id inputs, one array and an array of arrays, are counted by their length', async () => {
    const sdk = client(suite.setup.url, suite.key.key);
    const single = await sdk.embeddings.create({ model: 'mock-embedding', input: [101, 102, 103], encoding_format: 'float' });
    assert.equal(single.data.length, 1);
    assert.equal(single.usage.prompt_tokens, 3);
    const many = await sdk.embeddings.create({ model: 'sim-embedding', input: [[1, 2, 3], [4, 5]], encoding_format: 'float' });
    assert.equal(many.data.length, 2);
    assert.equal(many.usage.prompt_tokens, 5);
    const record = await lastRecord();
    assert.equal(record.prompt_tokens, 5);
    await settled('token arrays');
  });

  test('an upstream that reports no usage: counted locally, billed, and the client sees what was billed', async () => {
    suite.setup.mock.script({ omitUsage: true });
    const sdk = client(suite.setup.url, suite.key.key);
    const answer = await sdk.embeddings.create({ model: 'mock-embedding', input: 'hello there, general kenobi', encoding_format: 'float' });
    const record = await lastRecord();
    assert.equal(record.usage_source, 'estimated');
    assert.ok(record.prompt_tokens > 0);
    assert.equal(answer.usage.prompt_tokens, record.prompt_tokens);
    assert.equal(record.quota, inputOnlyQuota(0.13, record.prompt_tokens));
    await settled('no usage');
  });

  test('usage far beyond the input is a fault: billed at the bound (the input\'s bytes)', async () => {
    suite.setup.mock.script({ usageOverride: { prompt_tokens: 1_000_000 } });
    const answer = await call(suite.setup.url, 'POST', '/v1/embeddings', { token: `Bearer ${suite.key.key}`, body: { model: 'mock-embedding', input: 'hello' } });
    assert.equal(answer.status, 200);
    const record = await lastRecord();
    assert.ok(record.prompt_tokens <= 6, `billed ${record.prompt_tokens}`);
    assert.equal(answer.json.usage.prompt_tokens, record.prompt_tokens, 'the client sees what was billed');
    await settled('absurd usage');
  });

  test('bad requests are 400s in OpenAI\'s shape naming the field; nothing reaches the upstream or the ledger', async () => {
    const sdk = client(suite.setup.url, suite.key.key);
    const cases: Array<[Record<string, unknown>, string | null, RegExp]> = [
      [{ model: 'mock-embedding', input: '' }, 'input', /empty/],
      [{ model: 'mock-embedding', input: [] }, 'input', /empty/],
      [{ model: 'mock-embedding', input: Array.from({ length: 2049 }, () => 'a') }, 'input', /2048/],
      [{ model: 'mock-embedding', input: [[1, -2]] }, 'input[0]', /token id/],
      [{ model: 'mock-embedding', input: { text: 'x' } }, 'input', /string/],
      [{ model: 'mock-embedding', input: 'x', encoding_format: 'hex' }, 'encoding_format', /float/],
      [{ model: 'mock-embedding', input: 'x', dimensions: 0 }, 'dimensions', /positive/],
      [{ model: 'mock-chat', input: 'x' }, 'model', /not an embedding model/],
      [{ model: 'anthropic-embedding', input: 'x' }, 'model', /anthropic channel.*no embeddings endpoint/],
    ];
    for (const [body, param, message] of cases) {
      await expectApiError(sdk.embeddings.create(body as never), OpenAI.BadRequestError, { status: 400, param, message });
    }
    await expectApiError(sdk.embeddings.create({ model: 'no-such-model', input: 'x' }), OpenAI.NotFoundError, { status: 404, code: 'model_not_found' });
    const chat = await call(suite.setup.url, 'POST', '/v1/chat/completions', {
      token: `Bearer ${suite.key.key}`, body: { model: 'sim-embedding', messages: [{ role: 'user', content: 'hi' }] },
    });
    assert.equal(chat.status, 400);
    assert.equal(chat.json.error.code, 'model_not_supported');
    assert.equal(suite.setup.mock.requests.length, 0);
    assert.equal(await settled('bad requests'), 0);
  });

  test('the model list shows embedding models to usage-based keys; a per-call key neither sees nor calls them', async () => {
    const listed = await client(suite.setup.url, suite.key.key).models.list();
    const ids = listed.data.map((model) => model.id);
    assert.ok(ids.includes('sim-embedding') && ids.includes('mock-embedding'), ids.join(','));
    const perCall = await createKey(suite.setup.url, suite.setup.gateway.adminToken, { billing_type: 2 });
    const perCallIds = (await client(suite.setup.url, perCall.key).models.list()).data.map((model) => model.id);
    assert.ok(!perCallIds.includes('sim-embedding'));
    await expectApiError(client(suite.setup.url, perCall.key).embeddings.create({ model: 'sim-embedding', input: 'x' }),
      OpenAI.PermissionDeniedError, { status: 403, message: /per-call/ });
    await settled('listing');
  });
});
