// The openai SDK's embeddings.create (float and base64) and completions.create (legacy text
// completions, stream and not) through every channel kind: served by the OpenAI-compatible and the
// simulator channels with the usage the client saw equal to the record; the Anthropic channel has
// neither endpoint, a 400 that says so.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import OpenAI from 'openai';
import { assertBilledAsSeen, assertNoUpstreamName, MODELS, openaiClient, UPSTREAM_KEY, UPSTREAM_NAMES, useClientsSetup } from './harness';

const EMBEDDING = 'text-embedding-3-small';
const EMBEDDING_PRICE = 0.02;
UPSTREAM_NAMES[EMBEDDING] = 'embedding-upstream-0001';

/** ceil(tokens × USD per 1M × 500000 / 1e6), in integers */
const embeddingQuota = (tokens: number) => Number((BigInt(tokens) * BigInt(EMBEDDING_PRICE * 1_000_000) * 500_000n + 999_999_999_999n) / 1_000_000_000_000n);

describe('embeddings and legacy completions clients', () => {
  const fixture = useClientsSetup((mockUrl) => ({
    models: [{ id: EMBEDDING, owned_by: 'openai', kind: 'embedding', price: { input: EMBEDDING_PRICE } }],
    channels: [
      { name: 'openai-embeddings', type: 'openai', base_url: mockUrl, keys: [UPSTREAM_KEY], models: [EMBEDDING], groups: ['via-openai'], model_map: { [EMBEDDING]: UPSTREAM_NAMES[EMBEDDING] } },
      { name: 'simulator-embeddings', type: 'simulator', models: [EMBEDDING], groups: ['via-sim'] },
      { name: 'anthropic-embeddings', type: 'anthropic', base_url: mockUrl, keys: [UPSTREAM_KEY], models: [EMBEDDING], groups: ['default'] },
    ],
  }));
  const url = () => fixture.setup.url;

  for (const kind of ['openai', 'simulator'] as const) {
    test(`embeddings.create through the ${kind} channel, float and base64: usage seen = usage billed`, async () => {
      const key = fixture.setup.keys[kind];
      const sdk = openaiClient(url(), key.key);
      for (const encoding_format of [undefined, 'float', 'base64'] as const) {
        const answer = await sdk.embeddings.create({ model: EMBEDDING, input: ['first text', 'second'], dimensions: 8, ...(encoding_format ? { encoding_format } : {}) });
        assert.equal(answer.model, EMBEDDING);
        assertNoUpstreamName(JSON.stringify(answer), kind);
        assert.equal(answer.data.length, 2);
        if (encoding_format === 'base64') assert.equal(Buffer.from(answer.data[0].embedding as unknown as string, 'base64').length, 8 * 4);
        else assert.equal(answer.data[0].embedding.length, 8);
        const record = await fixture.lastRecord(key.id);
        assert.equal(record.endpoint, 'embeddings');
        assert.equal(record.prompt_tokens, answer.usage.prompt_tokens);
        assert.equal(record.completion_tokens, 0);
        assert.equal(record.quota, embeddingQuota(answer.usage.prompt_tokens));
      }
      await fixture.settled(`embeddings ${kind}`);
    });

    test(`completions.create through the ${kind} channel, stream and not: usage seen = usage billed`, async () => {
      const key = fixture.setup.keys[kind];
      const sdk = openaiClient(url(), key.key);
      const whole = await sdk.completions.create({ model: MODELS.gpt, prompt: 'Once upon a time', max_tokens: 20 });
      assert.equal(whole.model, MODELS.gpt);
      assertNoUpstreamName(JSON.stringify(whole), kind);
      assertBilledAsSeen(await fixture.lastRecord(key.id), MODELS.gpt, { prompt: whole.usage!.prompt_tokens, completion: whole.usage!.completion_tokens });
      const stream = await sdk.completions.create({ model: MODELS.gpt, prompt: 'Once upon a time', max_tokens: 20, stream: true, stream_options: { include_usage: true } });
      const chunks = [];
      for await (const chunk of stream) chunks.push(chunk);
      assertNoUpstreamName(JSON.stringify(chunks), kind);
      const usage = chunks.at(-1)!.usage!;
      assertBilledAsSeen(await fixture.lastRecord(key.id), MODELS.gpt, { prompt: usage.prompt_tokens, completion: usage.completion_tokens });
      await fixture.settled(`completions ${kind}`);
    });
  }

  test('the anthropic channel has neither endpoint: 400 unsupported_endpoint, nothing billed', async () => {
    const sdk = openaiClient(url(), fixture.setup.keys.anthropic.key);
    for (const request of [sdk.embeddings.create({ model: EMBEDDING, input: 'x' }), sdk.completions.create({ model: MODELS.gpt, prompt: 'x' })]) {
      const error = await request.then(() => undefined, (caught: unknown) => caught);
      assert.ok(error instanceof OpenAI.BadRequestError, String(error));
      assert.equal(error.code, 'unsupported_endpoint');
      assert.match(error.message, /anthropic channel/);
    }
    assert.equal(await fixture.settled('unsupported'), 0);
  });
});
