// workers/translate.ts through the real piscina pool: each translation gives the same text as the
// inline path, and a malformed upstream answer comes back as the gateway's 502, not a crash.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { isGatewayError } from '../../src/errors';
import { TaskPool } from '../../src/pool';
import { TRANSLATIONS, translate, type TranslatedText } from '../../src/providers/translation';

const pool = new TaskPool();
after(async () => { await pool.close(); });

const anthropicRequest = {
  model: 'claude', max_tokens: 100, system: 'Be brief.', top_k: 3,
  messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'Hi' }, { type: 'image' as const, source: { type: 'url' as const, url: 'https://example.test/a.png' } }] }],
};
const openAIRequest = { model: 'gpt', messages: [{ role: 'system' as const, content: 'Be brief.' }, { role: 'user' as const, content: 'Hi' }], logprobs: true };
const openAIAnswer = JSON.stringify({
  id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'gpt',
  choices: [{ index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'length' }],
  usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
});
const anthropicAnswer = JSON.stringify({
  id: 'msg_1', type: 'message', role: 'assistant', model: 'claude', content: [{ type: 'text', text: 'Hello' }],
  stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 5, output_tokens: 1 },
});

test('every translation gives the same text and warnings in the pool as inline', async () => {
  const cases = [
    ['anthropicToOpenAIRequest', { body: anthropicRequest, model: 'gpt-upstream', defaultMaxTokens: 50 }],
    ['openAIToAnthropicRequest', { body: openAIRequest, model: 'claude-upstream', defaultMaxTokens: 50 }],
    ['openAIToAnthropicAnswer', { text: openAIAnswer, model: 'claude', channel: 'c' }],
    ['anthropicToOpenAIAnswer', { text: anthropicAnswer, model: 'gpt', channel: 'c' }],
  ] as const;
  for (const [name, input] of cases) {
    const pooled = await pool.run<TranslatedText>('translate', name, input);
    const inline = (TRANSLATIONS[name] as (value: unknown) => TranslatedText)(input);
    assert.equal(pooled.text, inline.text, name);
    assert.deepEqual(pooled.warnings, inline.warnings, name);
  }
  const anthropic = JSON.parse((await pool.run<TranslatedText>('translate', 'openAIToAnthropicAnswer', cases[2][1])).text);
  assert.equal(anthropic.stop_reason, 'max_tokens');
  const request = await pool.run<TranslatedText>('translate', 'anthropicToOpenAIRequest', cases[0][1]);
  assert.deepEqual(request.warnings, ['top_k: no OpenAI counterpart, dropped']);
});

test('translate() uses the pool only for large bodies, and only when there is one', async () => {
  const runs: string[] = [];
  const spy = { run: async <T>(file: string, name: string, input: unknown): Promise<T> => { runs.push(name); return pool.run<T>(file, name, input); } } as unknown as TaskPool;
  const input = { text: anthropicAnswer, model: 'gpt', channel: 'c' };
  await translate({ pools: undefined as never, pool: spy }, 'anthropicToOpenAIAnswer', input, false);
  assert.deepEqual(runs, []);
  await translate({ pools: undefined as never, pool: spy }, 'anthropicToOpenAIAnswer', input, true);
  assert.deepEqual(runs, ['anthropicToOpenAIAnswer']);
  const inline = await translate({ pools: undefined as never }, 'anthropicToOpenAIAnswer', input, true);
  assert.equal(JSON.parse(inline.text).choices[0].message.content, 'Hello');
});

test('a malformed upstream answer is a 502 upstream_malformed from the pool, as inline', async () => {
  for (const run of [
    () => pool.run('translate', 'anthropicToOpenAIAnswer', { text: '{"id":', model: 'gpt', channel: 'east' }),
    async () => TRANSLATIONS.anthropicToOpenAIAnswer({ text: '[1]', model: 'gpt', channel: 'east' }),
  ]) {
    let caught: unknown;
    try { await run(); } catch (error) { caught = error; }
    assert.ok(isGatewayError(caught), String(caught));
    assert.equal(caught.status, 502);
    assert.equal(caught.code, 'upstream_malformed');
    assert.match(caught.message, /east/);
  }
});
