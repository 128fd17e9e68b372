// Failover (DESIGN §5): a retryable failure moves on to the next channel; the caller's next step
// (`onResult`) runs on the attempt that succeeded, and what it throws is not an attempt's failure.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig, type ChannelType } from '../../src/config';
import type { GatewayContext } from '../../src/context';
import { upstreamError } from '../../src/errors';
import { failover, withFailover } from '../../src/relay/failover';
import { ChannelSelector } from '../../src/relay/channels';
import type { Provider } from '../../src/providers/types';

function context(): GatewayContext {
  const config = loadConfig({
    raw: {
      retries: 2,
      groups: { default: { ratio: 1 } },
      models: [{ id: 'gpt', price: { input: 1, output: 1 } }],
      channels: ['first', 'second', 'third'].map((name, index) => ({
        name, type: 'openai', base_url: 'http://127.0.0.1:9', models: ['gpt'], priority: 10 - index,
      })),
    },
    env: {},
  });
  const provider: Provider = { chatCompletions: () => Promise.reject(new Error('not called')) };
  const quiet = { warn: () => undefined } as unknown as GatewayContext['log'];
  return {
    config, models: new Map(config.models.map((model) => [model.id, model])), channels: new ChannelSelector(config),
    providers: new Map<ChannelType, Provider>([['openai', provider]]), log: quiet,
  } as unknown as GatewayContext;
}

const signal = new AbortController().signal;
const capable = () => true;

test('a retryable failure moves on; onResult gets the answer and the attempt that gave it', async () => {
  const gateway = context();
  const tried: string[] = [];
  const result = await failover(gateway, gateway.models.get('gpt')!, 'default', capable, (attempt) => {
    tried.push(attempt.channel.name);
    return attempt.channel.name === 'first' ? Promise.reject(upstreamError(503, 'busy')) : Promise.resolve(`answer of ${attempt.channel.name}`);
  }, signal, (answer, attempt) => `${answer} via ${attempt.channel.name}`);
  assert.deepEqual(tried, ['first', 'second']);
  assert.equal(result, 'answer of second via second');
});

test("what onResult throws rejects at once: no other channel is tried, even for a retryable error", async () => {
  const gateway = context();
  const tried: string[] = [];
  const thrown = upstreamError(502, 'the answer was malformed');
  await assert.rejects(failover(gateway, gateway.models.get('gpt')!, 'default', capable, (attempt) => {
    tried.push(attempt.channel.name);
    return Promise.resolve('bytes');
  }, signal, () => { throw thrown; }), (error) => error === thrown);
  assert.deepEqual(tried, ['first']);
});

test('withFailover still answers with the result and its attempt; the last error when every channel failed', async () => {
  const gateway = context();
  const { result, attempt } = await withFailover(gateway, gateway.models.get('gpt')!, 'default', capable,
    (next) => Promise.resolve(next.channel.name.length), signal);
  assert.equal(result, 5);
  assert.equal(attempt.channel.name, 'first');
  let calls = 0;
  await assert.rejects(withFailover(gateway, gateway.models.get('gpt')!, 'default', capable, () => {
    calls += 1;
    return Promise.reject(upstreamError(503, `busy ${calls}`));
  }, signal), /busy 3/);
  assert.equal(calls, 3);
});
