// Failover (DESIGN §5): a retryable failure moves on to the next channel, up to `retries` more; a
// failure that is not retryable ends it at once; the answer comes with the attempt that gave it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig, type ChannelType } from '../../src/config';
import type { GatewayContext } from '../../src/context';
import { upstreamError } from '../../src/errors';
import { withFailover } from '../../src/relay/failover';
import { ChannelSelector } from '../../src/relay/channels';
import { MetricsRecorder } from '../../src/metrics/recorder';
import type { Provider } from '../../src/providers/types';

function context(): GatewayContext {
  const config = loadConfig({
    raw: {
      retries: 2,
      groups: { default: { ratio: 1 } },
      models: [{ id: 'gpt', price: { input: 1, output: 1 } }],
      channels: ['first', 'second', 'third', 'fourth'].map((name, index) => ({
        name, type: 'openai', base_url: 'http://127.0.0.1:9', models: ['gpt'], priority: 10 - index,
      })),
    },
    env: {},
  });
  const provider: Provider = { chatCompletions: () => Promise.reject(new Error('not called')) };
  const quiet = { warn: () => undefined } as unknown as GatewayContext['log'];
  return {
    config, models: new Map(config.models.map((model) => [model.id, model])), channels: new ChannelSelector(config),
    providers: new Map<ChannelType, Provider>([['openai', provider]]), log: quiet, ops: { metrics: new MetricsRecorder() },
  } as unknown as GatewayContext;
}

const signal = new AbortController().signal;
const capable = () => true;

test('a retryable failure moves on to the next channel; the answer comes with the attempt that gave it', async () => {
  const gateway = context();
  const tried: string[] = [];
  const { result, attempt } = await withFailover(gateway, gateway.models.get('gpt')!, 'default', capable, (next) => {
    tried.push(next.channel.name);
    return next.channel.name === 'first' ? Promise.reject(upstreamError(503, 'busy')) : Promise.resolve(`answer of ${next.channel.name}`);
  }, signal);
  assert.deepEqual(tried, ['first', 'second']);
  assert.equal(result, 'answer of second');
  assert.equal(attempt.channel.name, 'second');
});

test('a failure that is not retryable ends the call at once: no other channel is tried', async () => {
  const gateway = context();
  const tried: string[] = [];
  const thrown = upstreamError(400, 'bad request', 'upstream_error', false);
  await assert.rejects(withFailover(gateway, gateway.models.get('gpt')!, 'default', capable, (next) => {
    tried.push(next.channel.name);
    return Promise.reject(thrown);
  }, signal), (error) => error === thrown);
  assert.deepEqual(tried, ['first']);
});

test('the first channel answers when it can; after retries + 1 failed attempts (of four channels) the last error', async () => {
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
