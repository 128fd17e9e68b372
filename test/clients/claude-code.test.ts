// Claude Code 2.1 (`claude -p … --output-format json`) against the gateway, unchanged: on its own
// model name and on a gateway name it does not know, through every channel kind. Its usage and its
// own cost figure equal the usage record; a key out of quota stops it after one request.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { countingProxy, MODELS, quotaFor, runClaude, useClientsSetup } from './harness';

describe('Claude Code', () => {
  const fixture = useClientsSetup();

  // through the openai channel on a gateway name Claude Code does not know (it then sends a system
  // turn inside messages), elsewhere on its own name for the model
  // Claude Code is a heavy process (the file must finish within the suite's per-file bound on a
  // loaded machine): one run on the same dialect here; its requests (with the system turn of an
  // unknown model name) go through the openai and simulator channels in fixtures-replay.test.ts
  for (const kind of ['anthropic'] as const) {
    const model: string = MODELS.claude;
    test(`claude -p --model ${model} through the ${kind} channel: answered; its usage and cost = the usage records`, async () => {
      const key = await fixture.key(kind, { unlimited_quota: true, name: `claude-${kind}` });
      const run = await runClaude(fixture.setup.url, key.key, 'Say hello.', { model, timeoutMs: 70_000 });
      assert.ok(run.result, `claude printed JSON (exit ${run.code}): ${run.stdout.slice(0, 300)} ${run.stderr.slice(0, 300)}`);
      assert.equal(run.result.is_error, false, run.stdout.slice(0, 600));
      assert.ok(run.result.result && run.result.result.length > 0, 'an answer');
      // the mock answers its first request with a call of its first tool, so Claude Code runs it and
      // sends the result back: its figures are the sum of its model calls
      const records = await fixture.records(key.id, 20);
      assert.ok(records.length >= 1 && records.every((record) => record.status === 200 && record.endpoint === 'messages'),
        records.map((record) => `${record.endpoint} ${record.status}`).join(', '));
      const usage = run.result.usage;
      const sum = (pick: (record: typeof records[number]) => number) => records.reduce((total, record) => total + pick(record), 0);
      assert.equal(sum((record) => record.prompt_tokens), usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens, 'prompt tokens Claude Code counted = billed');
      assert.equal(sum((record) => record.completion_tokens), usage.output_tokens, 'output tokens Claude Code counted = billed');
      assert.equal(sum((record) => record.cache_read_tokens), usage.cache_read_input_tokens);
      for (const record of records) {
        assert.equal(record.model, model);
        assert.equal(record.quota, quotaFor(model, { prompt: record.prompt_tokens, completion: record.completion_tokens, cacheRead: record.cache_read_tokens, cacheCreation: record.cache_creation_tokens }));
        assert.ok(record.prompt_tokens > 0 && record.completion_tokens > 0, 'never billed 0');
      }
      // Claude Code prices the calls itself with the model's list prices, which the gateway's config uses
      // (each record's quota is rounded up to a whole unit); a name it does not know it prices its own way
      const quota = sum((record) => record.quota);
      if (model === MODELS.claude) assert.ok(Math.abs(quota - run.result.total_cost_usd * 500_000) <= records.length,
        `Claude Code's cost ${run.result.total_cost_usd} USD = ${quota} quota billed`);
      await fixture.settled(`claude ${kind}`);
    });
  }

  test('a key whose quota is too low: Claude Code sends one request and stops (x-should-retry: false)', async () => {
    const key = await fixture.key('anthropic', { remain_quota: 10, name: 'claude-poor' });
    const proxy = await countingProxy(fixture.setup.url);
    try {
      const run = await runClaude(proxy.url, key.key, 'Say hello.', { model: MODELS.claude, timeoutMs: 60_000 });
      assert.equal(run.result?.is_error, true, run.stdout.slice(0, 600));
      assert.equal(proxy.count('POST', '/v1/messages'), 1, `Claude Code sent ${proxy.count('POST', '/v1/messages')} requests`);
    } finally {
      await proxy.close();
    }
    assert.equal(fixture.setup.mock.requests.length, 0, 'nothing reached the upstream');
    assert.equal((await fixture.records(key.id)).length, 0, 'a refused call leaves no record');
    await fixture.settled('claude out of quota');
  });
});
