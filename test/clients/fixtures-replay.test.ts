// The fixture corpus (test/fixtures/clients/, written by scripts/capture-client-fixtures.ts from
// real clients: Claude Code's requests with all their tools, the SDKs' thinking, structured-output,
// tool-result and document requests) replayed through every channel kind. Each must be served,
// show the client's model name only, and show usage equal to its usage record.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { REPO_ROOT } from '../helpers/gateway';
import { anthropicEvents, postMessages } from '../integration/messages-harness';
import { assertStreamTail, postChat } from '../integration/chat-harness';
import { assertBilledAsSeen, assertNoUpstreamName, CHANNEL_KINDS, MODELS, useClientsSetup } from './harness';

const CORPUS = join(REPO_ROOT, 'test', 'fixtures', 'clients');

interface Fixture { client: string; note: string; path: string; body: Record<string, unknown> }

function corpus(dialect: 'anthropic' | 'openai'): { name: string; fixture: Fixture }[] {
  return readdirSync(join(CORPUS, dialect)).filter((file) => file.endsWith('.json')).sort()
    .map((file) => ({ name: file.replace(/\.json$/, ''), fixture: JSON.parse(readFileSync(join(CORPUS, dialect, file), 'utf8')) as Fixture }));
}

describe('the client request corpus through every channel kind', () => {
  const fixture = useClientsSetup();

  test('the corpus holds Claude Code\'s requests (one with 20+ tools, one with a system turn) and the SDKs\' thinking, structured-output and tool-result requests', () => {
    const anthropic = corpus('anthropic');
    const named = (name: string) => anthropic.find((entry) => entry.name === name)?.fixture.body as any;
    assert.ok((named('claude-code-all-tools').tools as unknown[]).length >= 20);
    assert.ok((named('claude-code-unknown-model').messages as any[]).some((message) => message.role === 'system'));
    assert.equal(named('claude-code-default').thinking.type, 'adaptive');
    assert.equal(named('anthropic-sdk-structured').output_config.format.type, 'json_schema');
    assert.ok(corpus('openai').some((entry) => (entry.fixture.body.response_format as any)?.type === 'json_schema'));
    for (const { name, fixture: { body } } of [...anthropic, ...corpus('openai')]) {
      assert.ok(!/sk-[A-Za-z0-9]{20,}/.test(JSON.stringify(body)), `${name}: no key in the corpus`);
    }
  });

  for (const { name, fixture: recorded } of corpus('anthropic')) {
    for (const kind of CHANNEL_KINDS) {
      test(`${name} (${recorded.client}) through the ${kind} channel`, async () => {
        const key = fixture.setup.keys[kind];
        const body: Record<string, unknown> = { ...recorded.body, model: MODELS.claude };
        const answer = await postMessages(fixture.setup.url, { 'x-api-key': key.key, 'anthropic-version': '2023-06-01' }, body);
        assert.equal(answer.status, 200, `${name} via ${kind}: ${answer.text.slice(0, 400)}`);
        assertNoUpstreamName(answer.text, `${name} via ${kind}`);
        let usage: { input_tokens: number; output_tokens: number; cache_read_input_tokens?: number; cache_creation_input_tokens?: number };
        if (body.stream === true) {
          const events = anthropicEvents(answer.text);
          const start = events.find((event) => event.event === 'message_start')!.data.message;
          const delta = events.filter((event) => event.event === 'message_delta').at(-1)!.data;
          assert.equal(start.model, MODELS.claude);
          assert.ok(start.usage && delta.usage, `${name} via ${kind}: usage in message_start and message_delta`);
          assert.equal(events.at(-1)!.event, 'message_stop');
          usage = { ...start.usage, ...delta.usage };
        } else {
          assert.equal(answer.json.model, MODELS.claude);
          usage = answer.json.usage;
        }
        const cacheRead = usage.cache_read_input_tokens ?? 0;
        const cacheCreation = usage.cache_creation_input_tokens ?? 0;
        assertBilledAsSeen(await fixture.lastRecord(key.id), MODELS.claude, {
          prompt: usage.input_tokens + cacheRead + cacheCreation, completion: usage.output_tokens, cacheRead, cacheCreation,
        });
        await fixture.settled(`${name} via ${kind}`);
      });
    }
  }

  for (const { name, fixture: recorded } of corpus('openai')) {
    for (const kind of CHANNEL_KINDS) {
      test(`${name} (${recorded.client}) through the ${kind} channel`, async () => {
        const key = fixture.setup.keys[kind];
        const body: Record<string, unknown> = { ...recorded.body, model: MODELS.gpt };
        const answer = await postChat(fixture.setup.url, key.key, body);
        assert.equal(answer.status, 200, `${name} via ${kind}: ${answer.text.slice(0, 400)}`);
        assertNoUpstreamName(answer.text, `${name} via ${kind}`);
        const usage = body.stream === true ? assertStreamTail(answer.text).usage : answer.json.usage;
        if (body.stream !== true) assert.equal(answer.json.model, MODELS.gpt);
        assertBilledAsSeen(await fixture.lastRecord(key.id), MODELS.gpt, {
          prompt: usage.prompt_tokens, completion: usage.completion_tokens, cacheRead: usage.prompt_tokens_details?.cached_tokens ?? 0,
        });
        await fixture.settled(`${name} via ${kind}`);
      });
    }
  }
});
