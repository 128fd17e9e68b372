// POST /v1/chat/completions through an `openai` channel (the mock upstream) and the embedded
// `simulator` channel, driven by the official openai SDK and raw fetch, on both HTTP fronts
// (spec §2.4, §4.2 rules 1–2; DESIGN §5 streams).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FRONTS } from '../helpers/gateway';
import {
  assertStreamTail, client, createKey, flushCharges, MOCK_PIECES, mockPromptTokens, postChat, sseEvents, startChatSetup,
  type ChatSetup, type CreatedKey,
} from './chat-harness';

const QUESTION = 'Say hello to the gateway, please.';

for (const front of FRONTS) {
  describe(`chat completions (${front} front)`, () => {
    let setup: ChatSetup;
    let key: CreatedKey;

    before(async () => {
      setup = await startChatSetup({ front });
      await setup.gateway.gateway.context.store.accounts.topUp(1, 50_000_000);
      key = await createKey(setup.url, setup.gateway.adminToken, { name: 'chat' });
    });
    after(async () => { await setup?.close(); });

    test('non-stream through the openai channel: a chat.completion object with usage (SDK)', async () => {
      const completion = await client(setup.url, key.key).chat.completions.create({
        model: 'mock-chat', messages: [{ role: 'user', content: QUESTION }],
      });
      assert.equal(completion.object, 'chat.completion');
      assert.equal(completion.model, 'mock-chat');
      assert.match(completion.id, /\S/);
      assert.ok(Number.isInteger(completion.created));
      assert.equal(completion.choices.length, 1);
      assert.equal(completion.choices[0].index, 0);
      assert.equal(completion.choices[0].message.role, 'assistant');
      assert.match(completion.choices[0].message.content ?? '', /^Hello from the mock upstream\./);
      assert.equal(completion.choices[0].finish_reason, 'stop');
      assert.deepEqual(
        { prompt: completion.usage?.prompt_tokens, completion: completion.usage?.completion_tokens, total: completion.usage?.total_tokens },
        { prompt: mockPromptTokens([QUESTION]), completion: MOCK_PIECES, total: mockPromptTokens([QUESTION]) + MOCK_PIECES });
      const forwarded = setup.mock.requests.at(-1)!;
      assert.equal(forwarded.headers.authorization, 'Bearer upstream-key-1', 'the channel key, not the client key, goes upstream');
    });

    test('stream through the openai channel: SDK iteration sees the text, the final chunk, usage', async () => {
      const stream = await client(setup.url, key.key).chat.completions.create({
        model: 'mock-chat', messages: [{ role: 'user', content: QUESTION }], stream: true,
      });
      let text = '';
      const chunks: any[] = [];
      for await (const chunk of stream) {
        chunks.push(chunk);
        text += chunk.choices[0]?.delta?.content ?? '';
      }
      assert.match(text, /^Hello from the mock upstream\./);
      const last = chunks.at(-1);
      assert.equal(last.object, 'chat.completion.chunk');
      assert.equal(last.choices[0].finish_reason, 'stop');
      assert.equal(last.usage.completion_tokens, MOCK_PIECES);
      assert.equal(last.usage.prompt_tokens, mockPromptTokens([QUESTION]));
      assert.equal(setup.mock.requests.at(-1)!.body && (setup.mock.requests.at(-1)!.body as any).stream_options?.include_usage, true,
        'the gateway asks the upstream for usage');
    });

    test('stream raw bytes: SSE headers, chunks, empty-delta final chunk with usage, then data: [DONE]', async () => {
      const answer = await postChat(setup.url, key.key, { model: 'mock-chat', messages: [{ role: 'user', content: QUESTION }], stream: true });
      assert.equal(answer.status, 200, answer.text);
      assert.match(answer.headers.get('content-type') ?? '', /^text\/event-stream/);
      assert.match(answer.headers.get('cache-control') ?? '', /no-cache/);
      assert.equal(answer.headers.get('x-accel-buffering'), 'no');
      const final = assertStreamTail(answer.text);
      assert.equal(final.usage.completion_tokens, MOCK_PIECES);
      const events = sseEvents(answer.text);
      assert.equal(events[0].json.choices[0].delta.role, 'assistant');
      for (const event of events.slice(0, -1)) assert.equal(event.json.model, 'mock-chat');
    });

    test('upstream without usage (omitUsage): the tail still carries usage, estimated, and the record says so', async () => {
      for (const stream of [true, false]) {
        setup.mock.script({ omitUsage: true });
        const probe = await createKey(setup.url, setup.gateway.adminToken, { name: `no-usage-${stream}` });
        const answer = await postChat(setup.url, probe.key, { model: 'mock-chat', messages: [{ role: 'user', content: QUESTION }], stream });
        assert.equal(answer.status, 200, answer.text);
        const usage = stream ? assertStreamTail(answer.text).usage : answer.json.usage;
        assert.ok(usage.prompt_tokens > 0 && usage.completion_tokens > 0, JSON.stringify(usage));
        await flushCharges(setup);
        const records = (await setup.gateway.gateway.context.store.usage.list(1, { keyId: probe.id }, 0, 10)).items;
        assert.equal(records.length, 1);
        assert.equal(records[0].usage_source, 'estimated');
        assert.equal(records[0].completion_tokens, usage.completion_tokens);
        assert.ok(records[0].quota > 0);
      }
    });

    test('the stream tail is rewritten even when the upstream leaves out [DONE] after a finished stream', async () => {
      setup.mock.script({ omitDone: true });
      const answer = await postChat(setup.url, key.key, { model: 'mock-chat', messages: [{ role: 'user', content: QUESTION }], stream: true });
      assert.equal(answer.status, 200);
      const events = sseEvents(answer.text);
      const last = events.at(-1)!;
      // Either a complete tail (finish_reason was seen) or an error event: never a silent cut.
      if (last.data === '[DONE]') assertStreamTail(answer.text);
      else assert.ok(last.json?.error, answer.text.slice(-400));
    });

    test('simulator channel: non-stream and stream, SDK', async () => {
      const openai = client(setup.url, key.key);
      const completion = await openai.chat.completions.create({ model: 'sim-gpt-mini', messages: [{ role: 'user', content: QUESTION }] });
      assert.equal(completion.object, 'chat.completion');
      assert.equal(completion.model, 'sim-gpt-mini');
      assert.ok((completion.choices[0].message.content ?? '').length > 0);
      assert.ok((completion.usage?.completion_tokens ?? 0) > 0);
      const stream = await openai.chat.completions.create({ model: 'sim-gpt-mini', messages: [{ role: 'user', content: QUESTION }], stream: true });
      let text = '';
      let lastChunk: any;
      for await (const chunk of stream) { text += chunk.choices[0]?.delta?.content ?? ''; lastChunk = chunk; }
      assert.ok(text.length > 0);
      assert.ok(lastChunk.usage.completion_tokens > 0);
      const raw = await postChat(setup.url, key.key, { model: 'sim-gpt-mini', messages: [{ role: 'user', content: QUESTION }], stream: true });
      assertStreamTail(raw.text);
    });

    test('n = 2 returns two choices and bills both', async () => {
      const completion = await client(setup.url, key.key).chat.completions.create({
        model: 'mock-chat', n: 2, messages: [{ role: 'user', content: QUESTION }],
      });
      assert.equal(completion.choices.length, 2);
      assert.equal(completion.usage?.completion_tokens, 2 * MOCK_PIECES);
      const stream = await postChat(setup.url, key.key, { model: 'mock-chat', n: 2, messages: [{ role: 'user', content: QUESTION }], stream: true });
      const final = assertStreamTail(stream.text);
      assert.equal(final.usage.completion_tokens, 2 * MOCK_PIECES);
    });

    test('unknown fields reach the upstream untouched; the model name is the upstream one', async () => {
      const extra = {
        seed: 42, logprobs: true, top_logprobs: 2, user: 'end-user-7', metadata: { trace: 'abc' },
        tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: {} } } }], tool_choice: 'none',
      };
      const answer = await postChat(setup.url, key.key, { model: 'mock-chat', messages: [{ role: 'user', content: QUESTION }], ...extra });
      assert.equal(answer.status, 200, answer.text);
      const body = setup.mock.requests.at(-1)!.body as Record<string, unknown>;
      for (const [field, value] of Object.entries(extra)) assert.deepEqual(body[field], value, field);
      assert.deepEqual(body.messages, [{ role: 'user', content: QUESTION }]);
      assert.equal(body.model, 'mock-chat');
    });
  });
}
