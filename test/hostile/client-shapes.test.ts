// Issue 23's new shapes under hostile input: system turns, thinking types, file/url/text/content
// sources, output_config, nameless server tools, the Anthropic model list's paging, HEAD /api/hello.
// Depth, size and fuzz: always an answer, a 4xx for what is wrong (never a 5xx from the gateway, a
// hang or a crash), and the money invariants after each scenario.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { call, REPO_ROOT } from '../helpers/gateway';
import { CHANNEL_KINDS, MODELS, useClientsSetup } from '../clients/harness';

const ANTHROPIC_HEADERS = { 'anthropic-version': '2023-06-01' };
const DEPTH = 1_000;
/**
 * Claude Code's request in its shape (system blocks with cache_control, a system turn, adaptive
 * thinking, output_config, context_management, tools) cut to a few hundred characters a text and
 * three tools, so each fuzz round costs little to translate and count.
 */
const CLAUDE_CODE = (() => {
  const body = JSON.parse(readFileSync(join(REPO_ROOT, 'test', 'fixtures', 'clients', 'anthropic', 'claude-code-unknown-model.json'), 'utf8')).body;
  const cut = (value: any): any => (typeof value === 'string' ? value.slice(0, 300)
    : Array.isArray(value) ? value.map(cut) : value && typeof value === 'object' ? Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, cut(inner)])) : value);
  return cut({ ...body, tools: body.tools.slice(0, 3) }) as Record<string, unknown>;
})();

/** A deterministic pseudo-random sequence (the fuzz cases are the same on every run). */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const ODD_VALUES: unknown[] = [null, '', 0, -1, 1e308, true, [], {}, 'x'.repeat(10_000), [null], { type: 'adaptive' }, { type: 'file', file_id: '' }];

/** One mutation of a JSON value: a field replaced by an odd value, deleted, or an array emptied. */
function mutate(value: unknown, next: () => number, depth = 0): unknown {
  if (Array.isArray(value)) {
    if (value.length === 0 || next() < 0.1) return ODD_VALUES[Math.floor(next() * ODD_VALUES.length)];
    const copy = [...value];
    const index = Math.floor(next() * copy.length);
    copy[index] = mutate(copy[index], next, depth + 1);
    return copy;
  }
  if (typeof value === 'object' && value !== null) {
    const keys = Object.keys(value);
    if (keys.length === 0 || (depth > 0 && next() < 0.15)) return ODD_VALUES[Math.floor(next() * ODD_VALUES.length)];
    const copy: Record<string, unknown> = { ...(value as Record<string, unknown>) };
    const key = keys[Math.floor(next() * keys.length)];
    if (next() < 0.2) delete copy[key];
    else copy[key] = mutate(copy[key], next, depth + 1);
    return copy;
  }
  return ODD_VALUES[Math.floor(next() * ODD_VALUES.length)];
}

describe('hostile: the current client shapes', () => {
  const fixture = useClientsSetup();
  const url = () => fixture.setup.url;
  const messages = (kind: typeof CHANNEL_KINDS[number], body: unknown) =>
    call(url(), 'POST', '/v1/messages', { headers: { ...ANTHROPIC_HEADERS, 'x-api-key': fixture.setup.keys[kind].key }, body });

  test('fuzz: 36 mutations of Claude Code\'s request through every channel kind are served or refused with a 4xx', async () => {
    const next = random(23);
    const statuses = new Map<number, number>();
    for (let round = 0; round < 36; round += 1) {
      const body = { ...(mutate(CLAUDE_CODE, next) as Record<string, unknown>), model: MODELS.claude, stream: next() < 0.5, max_tokens: 64 };
      const kind = CHANNEL_KINDS[round % CHANNEL_KINDS.length];
      const answer = await messages(kind, body);
      statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
      assert.ok(answer.status === 200 || (answer.status >= 400 && answer.status < 500), `round ${round} via ${kind}: ${answer.status} ${answer.text.slice(0, 300)}`);
      if (answer.status !== 200) assert.equal(answer.json?.type, 'error', `an Anthropic error body: ${answer.text.slice(0, 200)}`);
    }
    assert.ok((statuses.get(200) ?? 0) > 0 && [...statuses.keys()].some((status) => status >= 400), `a mix of served and refused: ${JSON.stringify([...statuses])}`);
    await fixture.settled('fuzz');
  });

  test('depth: an output_config schema, a document content source and a tool schema nested 1,000 deep get a 4xx or are served, never a 5xx', async () => {
    // written as text. (Far deeper bodies overflow JSON.stringify when forwarded: a body depth limit
    // belongs to the request reader, issue 21.)
    const schema = `${'{"type":"object","properties":{"a":'.repeat(DEPTH)}{"type":"string"}${'}}'.repeat(DEPTH)}`;
    for (const kind of CHANNEL_KINDS) {
      for (const [label, extra] of [
        ['output_config', `"output_config":{"format":{"type":"json_schema","schema":${schema}}}`],
        ['tools', `"tools":[{"name":"deep","input_schema":${schema}}]`],
        ['document', `"system":"s","messages":[{"role":"user","content":[{"type":"document","source":{"type":"content","content":[{"type":"text","text":"x","citations":${schema}}]}}]}]`],
      ]) {
        const rawBody = `{"model":${JSON.stringify(MODELS.claude)},"max_tokens":16,${label === 'document' ? '' : '"messages":[{"role":"user","content":"hi"}],'}${extra}}`;
        const answer = await call(url(), 'POST', '/v1/messages', { headers: { ...ANTHROPIC_HEADERS, 'x-api-key': fixture.setup.keys[kind].key }, rawBody });
        assert.ok(answer.status < 500, `${kind} ${label}: ${answer.status} ${answer.text.slice(0, 200)}`);
      }
    }
    await fixture.settled('depth');
  });

  test('size: 5,000 system turns, a 1 MB file_id, 2,000 nameless server tools', async () => {
    const systemTurns = Array.from({ length: 5_000 }, (_, index) => ({ role: 'system', content: `rule ${index}` }));
    for (const kind of CHANNEL_KINDS) {
      const turns = await messages(kind, { model: MODELS.claude, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }, ...systemTurns] });
      assert.ok(turns.status === 200 || (turns.status >= 400 && turns.status < 500), `${kind}: ${turns.status} ${turns.text.slice(0, 200)}`);
      const file = await messages(kind, { model: MODELS.claude, max_tokens: 16, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'file', file_id: 'f'.repeat(1_000_000) } }, { type: 'text', text: 'hi' }] }] });
      // a Files API id means nothing outside Anthropic: refused by name there, forwarded to Anthropic
      if (kind === 'anthropic') assert.equal(file.status, 200, file.text.slice(0, 200));
      else {
        assert.equal(file.status, 400, file.text.slice(0, 200));
        assert.match(file.json.error.message, /file/);
        assert.ok(file.text.length < 2_000, 'the error does not echo the id');
      }
      const tools = await messages(kind, { model: MODELS.claude, max_tokens: 16, tools: Array.from({ length: 2_000 }, () => ({ type: 'computer_toolset_20260801' })), messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(tools.status, 200, tools.text.slice(0, 200));
    }
    await fixture.settled('size');
  });

  test('odd thinking and output_config values: a 400 naming the field, or passed on as the upstream\'s business', async () => {
    for (const [thinking, param] of [[{ type: '' }, 'thinking.type'], [{ type: 5 }, 'thinking.type'], ['adaptive', 'thinking'], [{ type: 'enabled', budget_tokens: 'lots' }, 'thinking.budget_tokens']] as const) {
      const answer = await messages('anthropic', { model: MODELS.claude, max_tokens: 16, thinking, messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(answer.status, 400, `${JSON.stringify(thinking)}: ${answer.text}`);
      assert.match(answer.json.error.message, new RegExp(`^${param.replace('.', '\\.')}:`));
    }
    const future = await messages('anthropic', { model: MODELS.claude, max_tokens: 16, thinking: { type: 'some_future_mode', knob: 3 }, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(future.status, 200, 'a thinking type from a newer API version is the upstream\'s to judge');
    assert.deepEqual((fixture.setup.mock.requests.at(-1)!.body as any).thinking, { type: 'some_future_mode', knob: 3 });
    for (const output_config of [7, { format: 'json' }, { format: { type: 'json_schema', schema: [] } }]) {
      const answer = await messages('openai', { model: MODELS.claude, max_tokens: 16, output_config, messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(answer.status, 400, answer.text);
    }
    await fixture.settled('odd values');
  });

  test('the Anthropic model list refuses bad paging with a 400 in its own shape; HEAD /api/hello ignores what it is sent', async () => {
    const headers = { ...ANTHROPIC_HEADERS, 'x-api-key': fixture.setup.keys.anthropic.key };
    for (const query of ['limit=0', 'limit=abc', 'limit=1001', 'limit=1e3', `after_id=${'x'.repeat(5_000)}`, 'before_id=nope']) {
      const answer = await call(url(), 'GET', `/v1/models?${query}`, { headers });
      assert.equal(answer.status, 400, `${query.slice(0, 40)}: ${answer.text.slice(0, 200)}`);
      assert.equal(answer.json.type, 'error');
      assert.ok(answer.text.length < 1_000, 'the error does not echo the whole value');
    }
    const last = await call(url(), 'GET', '/v1/models?limit=1&before_id=gpt-4o-mini', { headers });
    assert.equal(last.status, 200, last.text);
    assert.equal(last.json.data.length, 1);
    const hello = await call(url(), 'HEAD', '/api/hello?x=1', { headers: { authorization: 'Bearer nonsense', 'x-api-key': 'y'.repeat(4_000) } });
    assert.equal(hello.status, 200);
    await fixture.settled('paging');
  });
});
