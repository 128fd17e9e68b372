// Image generation and editing (spec §2.6, §4.5, §4.6, §7.2) and chat-based images, driven by the
// official `openai` package against a mock upstream channel and the simulator, once per HTTP front.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, beforeEach, describe, test } from 'node:test';
import OpenAI, { toFile } from 'openai';
import { startMockUpstream, type MockUpstream, type MultipartBody } from '../../scripts/mock-upstream';
import { usdToQuota } from '../../src/billing/pricing';
import { EMBEDDED_CONFIG } from '../../src/config';
import type { UsageRecord } from '../../src/store';
import { call, FRONTS, startTestGateway, waitFor, type TestGateway } from '../helpers/gateway';

const FILE_LIMIT = 64 * 1024;
const FILES_LIMIT = 3;
const UPSTREAM_IMAGE_MODEL = 'upstream-image-v2';
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAAC0lEQVR4nGNgAAIAAAUAAXpeqz8AAAAASUVORK5CYII=', 'base64');
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

function testConfig(mockUrl: string): Record<string, unknown> {
  return {
    ...EMBEDDED_CONFIG,
    models: [
      ...EMBEDDED_CONFIG.models,
      { id: 'mock-image', kind: 'image', price: { per_call: 0.04 },
        image: { sizes: ['1024x1024', '1792x1024'], qualities: ['standard', 'hd'], size_multipliers: { '1792x1024': 2 }, quality_multipliers: { hd: 2 } } },
      { id: 'mock-image-plain', kind: 'image', price: { per_call: 0.02 }, image: { sizes: ['512x512'] } },
      { id: 'mock-image-url', kind: 'image', price: { per_call: 0.03 }, image: { url_inputs: true } },
      { id: 'mock-vision', price: { input: 1, output: 2 }, multimodal: true },
    ],
    channels: [
      { ...EMBEDDED_CONFIG.channels[0], simulator: { first_token_delay_ms: 0, tokens_per_second: 0 } },
      { name: 'mock', type: 'openai', base_url: mockUrl, keys: ['mock-key'], models: ['mock-image', 'mock-image-plain', 'mock-image-url', 'mock-vision'],
        model_map: { 'mock-image': UPSTREAM_IMAGE_MODEL } },
    ],
    limits: { multipart_file_bytes: FILE_LIMIT, multipart_files: FILES_LIMIT },
  };
}

/** A key created and revealed through the real key API, with quota to spend. */
async function createKey(gateway: TestGateway, name: string, remainQuota = 50_000_000): Promise<{ id: number; key: string }> {
  const created = await call(gateway.url, 'POST', '/api/token/', { token: gateway.adminToken, body: { name, remain_quota: remainQuota } });
  assert.equal(created.json?.success, true, created.text);
  const revealed = await call(gateway.url, 'POST', `/api/token/${created.json.data.id}/key`, { token: gateway.adminToken });
  return { id: created.json.data.id, key: revealed.json.data.key };
}

/** The error the SDK threw, as the client sees it. */
async function apiError(promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try { await promise; } catch (error) {
    assert.ok(error instanceof OpenAI.APIError, `expected an API error, got ${String(error)}`);
    return error;
  }
  assert.fail('the call succeeded but should have failed');
}

for (const front of FRONTS) {
  describe(`image endpoints (${front} front)`, () => {
    let mock: MockUpstream;
    let gateway: TestGateway;
    let key: { id: number; key: string };
    let client: OpenAI;

    const store = () => gateway.gateway.context.store;
    const records = async (): Promise<UsageRecord[]> => (await store().usage.list(1, { keyId: key.id }, 0, 100)).items;
    /** Waits for the batched commit of the newest charge; returns the newest record. */
    const newestRecord = async (count: number): Promise<UsageRecord> => {
      await waitFor(async () => (await records()).length >= count, 2_000);
      const list = await records();
      assert.equal(list.length, count, 'one usage record per call');
      return list[0];
    };
    const assertUsedEqualsRecords = async () => {
      const sum = await store().usage.sumForKey(1, key.id);
      assert.equal((await store().keys.byId(key.id))!.used_quota, sum.quota, 'used_quota is the sum of the records');
    };
    const mockRequests = (path: string) => mock.requests.filter((request) => request.path === path);

    before(async () => {
      mock = await startMockUpstream();
      gateway = await startTestGateway({ front, raw: testConfig(mock.url) });
      await store().accounts.topUp(1, 500_000_000);
      key = await createKey(gateway, 'images');
      client = new OpenAI({ apiKey: key.key, baseURL: `${gateway.url}/v1`, maxRetries: 0, logLevel: 'off' });
    });
    after(async () => {
      await gateway?.close();
      await mock?.close();
    });
    beforeEach(async () => {
      mock.reset();
      // Charges are committed in batches after the answer: start every test with none in flight.
      await gateway.gateway.context.ledger.flush();
    });

    describe('POST /v1/images/generations', () => {
      test('n images are all returned and billed per image × size and quality multipliers', async () => {
        const before = (await records()).length;
        const answer = await client.images.generate({ model: 'mock-image', prompt: 'a lighthouse', n: 3, size: '1792x1024', quality: 'hd', response_format: 'url' });
        assert.equal(answer.data?.length, 3);
        for (const image of answer.data ?? []) assert.match(image.url ?? '', /^http:\/\/127\.0\.0\.1:\d+\/files\/img-\d\.png$/);
        const expected = usdToQuota(0.04 * 3 * 2 * 2, 1);
        const record = await newestRecord(before + 1);
        assert.equal(record.quota, expected);
        assert.equal(record.endpoint, 'images.generations');
        assert.equal(record.model, 'mock-image');
        assert.equal(record.channel, 'mock');
        assert.equal(record.usage_source, 'per_call');
        await assertUsedEqualsRecords();
      });

      test('the upstream gets the original body with only model replaced: extra fields pass through untouched', async () => {
        const sent = {
          model: 'mock-image', prompt: 'a red fox', n: 1, size: '1024x1024', aspect_ratio: '21:9', seed: 42,
          prompt_upsampling: true, safety_tolerance: 2, output_format: 'webp', custom: { nested: [1, 'two'] },
        };
        const answer = await client.images.generate(sent as unknown as OpenAI.ImageGenerateParamsNonStreaming);
        assert.equal(answer.data?.length, 1);
        assert.ok(answer.data?.[0].b64_json, 'b64_json as the upstream gives it');
        const received = mockRequests('/v1/images/generations');
        assert.equal(received.length, 1);
        assert.deepEqual(received[0].body, { ...sent, model: UPSTREAM_IMAGE_MODEL });
        assert.equal(received[0].headers.authorization, 'Bearer mock-key');
      });

      test('the simulator answers n images as b64_json or url', async () => {
        const b64 = await client.images.generate({ model: 'sim-image', prompt: 'a cat', n: 2, response_format: 'b64_json' });
        assert.equal(b64.data?.length, 2);
        assert.deepEqual([...Buffer.from(b64.data![0].b64_json!, 'base64').subarray(1, 4)], [...Buffer.from('PNG')]);
        const urls = await client.images.generate({ model: 'sim-image', prompt: 'a cat', n: 4 });
        assert.equal(urls.data?.length, 4);
        assert.match(urls.data![3].url!, /^https:\/\/simulator\.invalid\/images\/[0-9a-f]{16}-3\.png$/);
      });

      test('a size the model does not offer is 400 with param size, and nothing is billed', async () => {
        const before = (await records()).length;
        const error = await apiError(client.images.generate({ model: 'mock-image', prompt: 'x', size: '512x512' }));
        assert.equal(error.status, 400);
        assert.equal(error.param, 'size');
        assert.match(error.message, /1024x1024, 1792x1024/);
        assert.equal(mockRequests('/v1/images/generations').length, 0);
        assert.equal((await records()).length, before);
      });

      test('quality (or style) on a model without them is 400 naming the field', async () => {
        const quality = await apiError(client.images.generate({ model: 'mock-image-plain', prompt: 'x', quality: 'hd' }));
        assert.equal(quality.status, 400);
        assert.equal(quality.param, 'quality');
        assert.match(quality.message, /quality is not supported by model mock-image-plain/);
        const style = await apiError(client.images.generate({ model: 'mock-image-plain', prompt: 'x', style: 'vivid' }));
        assert.equal(style.param, 'style');
      });

      test('model and prompt are required; n is 1–10; unknown models are 404; chat models are 400 naming model', async () => {
        const noPrompt = await apiError(client.images.generate({ model: 'mock-image' } as OpenAI.ImageGenerateParamsNonStreaming));
        assert.equal(noPrompt.status, 400);
        assert.equal(noPrompt.param, 'prompt');
        const tooMany = await apiError(client.images.generate({ model: 'mock-image', prompt: 'x', n: 11 }));
        assert.equal(tooMany.param, 'n');
        const unknown = await apiError(client.images.generate({ model: 'no-such-image', prompt: 'x' }));
        assert.equal(unknown.status, 404);
        assert.equal(unknown.code, 'model_not_found');
        const chat = await apiError(client.images.generate({ model: 'sim-gpt-mini', prompt: 'x' }));
        assert.equal(chat.status, 400);
        assert.equal(chat.param, 'model');
        assert.match(chat.message, /sim-gpt-mini/);
      });

      test('an invalid key is 401', async () => {
        const stranger = new OpenAI({ apiKey: 'sk-not-a-key', baseURL: `${gateway.url}/v1`, maxRetries: 0, logLevel: 'off' });
        const error = await apiError(stranger.images.generate({ model: 'mock-image', prompt: 'x' }));
        assert.equal(error.status, 401);
      });

      test('an upstream failure is a 5xx, not billed', async () => {
        const before = (await records()).length;
        mock.script({ status: 500 }, 10);
        const error = await apiError(client.images.generate({ model: 'mock-image', prompt: 'x' }));
        assert.ok(error.status! >= 500, `status ${error.status}`);
        const record = await newestRecord(before + 1);
        assert.equal(record.quota, 0);
        assert.equal(record.end_reason, 'failed');
        await assertUsedEqualsRecords();
      });
    });

    describe('POST /v1/images/edits', () => {
      test('image[] with two files reaches the upstream byte for byte, model replaced; billed per image', async () => {
        const first = Buffer.concat([PNG, Buffer.from('first')]);
        const second = Buffer.concat([PNG, Buffer.alloc(FILE_LIMIT - PNG.length - 10, 7)]);
        const before = (await records()).length;
        const answer = await client.images.edit({
          model: 'mock-image', prompt: 'merge the two', n: 2, size: '1792x1024',
          image: [await toFile(first, 'first.png', { type: 'image/png' }), await toFile(second, 'second.png', { type: 'image/png' })],
        });
        assert.equal(answer.data?.length, 2);
        const received = mockRequests('/v1/images/edits');
        assert.equal(received.length, 1);
        const body = received[0].body as MultipartBody;
        assert.deepEqual(body.files.map((file) => [file.field, file.filename, file.size, file.sha256]),
          [['image[]', 'first.png', first.length, sha256(first)], ['image[]', 'second.png', second.length, sha256(second)]]);
        assert.deepEqual(body.fields.model, [UPSTREAM_IMAGE_MODEL]);
        assert.deepEqual(body.fields.prompt, ['merge the two']);
        assert.deepEqual(body.fields.n, ['2']);
        const record = await newestRecord(before + 1);
        assert.equal(record.endpoint, 'images.edits');
        assert.equal(record.quota, usdToQuota(0.04 * 2 * 2, 1));
        await assertUsedEqualsRecords();
      });

      test('a mask file and the simulator: n edited images', async () => {
        const answer = await client.images.edit({
          model: 'sim-image', prompt: 'add a hat', n: 3,
          image: await toFile(PNG, 'in.png', { type: 'image/png' }), mask: await toFile(PNG, 'mask.png', { type: 'image/png' }),
        });
        assert.equal(answer.data?.length, 3);
        assert.ok(answer.data?.every((image) => typeof image.b64_json === 'string'));
      });

      test('a JSON body is 400 saying multipart is required', async () => {
        const answer = await call(gateway.url, 'POST', '/v1/images/edits', {
          token: `Bearer ${key.key}`, body: { model: 'mock-image', prompt: 'x', image: 'https://example.invalid/a.png' },
        });
        assert.equal(answer.status, 400, answer.text);
        assert.match(answer.json.error.message, /multipart\/form-data/);
        assert.equal(mockRequests('/v1/images/edits').length, 0);
      });

      test('a file over the file size limit is 413 naming the limit', async () => {
        const big = Buffer.alloc(FILE_LIMIT + 1, 1);
        const error = await apiError(client.images.edit({ model: 'mock-image', prompt: 'x', image: await toFile(big, 'big.png', { type: 'image/png' }) }));
        assert.equal(error.status, 413);
        assert.match(error.message, new RegExp(`${FILE_LIMIT}-byte file size limit`));
        assert.equal(mockRequests('/v1/images/edits').length, 0);
      });

      test('more files than the limit is 413 naming the limit', async () => {
        const files = await Promise.all(Array.from({ length: FILES_LIMIT + 1 }, (_, index) => toFile(PNG, `${index}.png`, { type: 'image/png' })));
        const error = await apiError(client.images.edit({ model: 'mock-image', prompt: 'x', image: files }));
        assert.equal(error.status, 413);
        assert.match(error.message, new RegExp(`too many files: the limit is ${FILES_LIMIT} files`));
      });

      test('image URL strings only for models that accept them', async () => {
        const form = (model: string) => {
          const data = new FormData();
          data.append('model', model);
          data.append('prompt', 'restyle');
          data.append('image', 'https://example.invalid/source.png');
          return data;
        };
        const refused = await fetch(`${gateway.url}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${key.key}` }, body: form('mock-image') });
        assert.equal(refused.status, 400);
        const refusedBody = await refused.json() as { error: { param: string; message: string } };
        assert.equal(refusedBody.error.param, 'image');
        assert.match(refusedBody.error.message, /does not accept image URLs/);

        const accepted = await fetch(`${gateway.url}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${key.key}` }, body: form('mock-image-url') });
        assert.equal(accepted.status, 200, await accepted.clone().text());
        const received = mockRequests('/v1/images/edits');
        assert.deepEqual((received[0].body as MultipartBody).fields.image, ['https://example.invalid/source.png']);
      });

      test('a missing image is 400 with param image', async () => {
        const data = new FormData();
        data.append('model', 'mock-image');
        data.append('prompt', 'x');
        const answer = await fetch(`${gateway.url}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${key.key}` }, body: data });
        assert.equal(answer.status, 400);
        assert.equal(((await answer.json()) as { error: { param: string } }).error.param, 'image');
      });
    });

    describe('chat-based images (chat completions)', () => {
      test('a ratio-marker message answers a markdown image link, billed per_call × n whatever the tokens', async () => {
        const before = (await records()).length;
        const completion = await client.chat.completions.create({
          model: 'sim-chat-image', n: 2,
          messages: [{ role: 'user', content: `a very long description of a mountain lake at dawn ${'with mist '.repeat(200)}【2:3】` }],
        });
        assert.equal(completion.choices.length, 2);
        for (const choice of completion.choices) {
          assert.match(choice.message.content ?? '', /^!\[image\]\(https:\/\/simulator\.invalid\/images\/[0-9a-f]{16}-2x3\.png\)$/);
        }
        assert.ok((completion.usage?.prompt_tokens ?? 0) > 100, 'the prompt has many tokens');
        const record = await newestRecord(before + 1);
        assert.equal(record.quota, usdToQuota(0.02 * 2, 1));
        assert.equal(record.usage_source, 'per_call');
        await assertUsedEqualsRecords();
      });

      test('text plus several image_url parts reach a multimodal model untouched', async () => {
        const content: OpenAI.ChatCompletionContentPart[] = [
          { type: 'text', text: 'fuse these two pictures' },
          { type: 'image_url', image_url: { url: 'https://example.invalid/one.png' } },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG.toString('base64')}`, detail: 'low' } },
        ];
        const completion = await client.chat.completions.create({ model: 'mock-vision', messages: [{ role: 'user', content }] });
        assert.equal(completion.choices[0].finish_reason, 'stop');
        assert.ok((completion.choices[0].message.content ?? '').length > 0);
        const received = mockRequests('/v1/chat/completions');
        assert.equal(received.length, 1);
        assert.deepEqual((received[0].body as { messages: unknown[] }).messages, [{ role: 'user', content }]);

        const simulated = await client.chat.completions.create({ model: 'sim-gpt-mini', messages: [{ role: 'user', content }] });
        assert.match(simulated.choices[0].message.content ?? '', /fuse these two pictures/);
      });

      test('an image or video model on chat completions or messages is 400 naming model, nothing sent upstream', async () => {
        for (const model of ['mock-image', 'veo3']) {
          const error = await apiError(client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] }));
          assert.equal(error.status, 400);
          assert.equal(error.param, 'model');
          assert.equal(error.code, 'model_not_supported');
          assert.match(error.message, new RegExp(`model ${model} is for (image|video) generation, not chat`));
          const messages = await call(gateway.url, 'POST', '/v1/messages', {
            headers: { 'x-api-key': key.key }, body: { model, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] },
          });
          assert.equal(messages.status, 400, messages.text);
          assert.equal(messages.json?.error?.type, 'invalid_request_error');
          assert.match(messages.json?.error?.message, /generation, not chat/);
        }
        assert.equal(mock.requests.length, 0);
      });
    });
  });
}
