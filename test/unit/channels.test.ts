// Channel order (DESIGN §5): highest priority first, weighted random within a priority, the rest
// as failover order; deterministic with an injected random; keys in turn; model_map.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig } from '../../src/config';
import { ChannelSelector } from '../../src/relay/channels';

const MODELS = [{ id: 'gpt', price: { input: 1, output: 1 } }, { id: 'other', price: { input: 1, output: 1 } }];

function selector(channels: Record<string, unknown>[]): ChannelSelector {
  const config = loadConfig({
    raw: {
      groups: { default: { ratio: 1 }, vip: { ratio: 2 } }, models: MODELS,
      channels: channels.map((channel) => ({ type: 'openai', base_url: 'http://127.0.0.1:9', models: ['gpt'], ...channel })),
    },
    env: {},
  });
  return new ChannelSelector(config);
}

const names = (list: readonly { name: string }[]) => list.map((channel) => channel.name);
const fixed = (value: number) => () => value;

test('higher priority first, whatever the weights', () => {
  const channels = selector([
    { name: 'low', priority: 0, weight: 100 },
    { name: 'high', priority: 10, weight: 1 },
    { name: 'middle', priority: 5, weight: 1 },
  ]);
  for (const random of [0, 0.5, 0.999]) assert.deepEqual(names(channels.order('gpt', 'default', 3, fixed(random))), ['high', 'middle', 'low']);
});

test('within a priority: picked by weight; the injected random decides', () => {
  const channels = selector([
    { name: 'a', priority: 1, weight: 3 },
    { name: 'b', priority: 1, weight: 1 },
    { name: 'fallback', priority: 0 },
  ]);
  // point = random × 4: [0, 3) → a, [3, 4) → b
  assert.deepEqual(names(channels.order('gpt', 'default', 3, fixed(0))), ['a', 'b', 'fallback']);
  assert.deepEqual(names(channels.order('gpt', 'default', 3, fixed(0.74))), ['a', 'b', 'fallback']);
  assert.deepEqual(names(channels.order('gpt', 'default', 3, fixed(0.76))), ['b', 'a', 'fallback']);
});

test('weights hold over many draws (seeded)', () => {
  const channels = selector([{ name: 'a', weight: 3 }, { name: 'b', weight: 1 }, { name: 'never', weight: 0 }]);
  let state = 12345;
  const random = () => { state = (state * 1103515245 + 12345) % 2147483648; return state / 2147483648; };
  const firsts = new Map<string, number>();
  for (let index = 0; index < 4000; index += 1) {
    const first = channels.order('gpt', 'default', 1, random)[0].name;
    firsts.set(first, (firsts.get(first) ?? 0) + 1);
  }
  assert.equal(firsts.get('never') ?? 0, 0, 'weight 0 is never first while others have weight');
  const share = (firsts.get('a') ?? 0) / 4000;
  assert.ok(share > 0.7 && share < 0.8, `a is first ${share} of the time (expected 0.75)`);
});

test('attempts: the list is as long as asked, repeating channels when there are fewer', () => {
  const two = selector([{ name: 'a', priority: 1 }, { name: 'b' }]);
  assert.deepEqual(names(two.order('gpt', 'default', 3, fixed(0))), ['a', 'b', 'a']);
  const one = selector([{ name: 'only' }]);
  assert.deepEqual(names(one.order('gpt', 'default', 3)), ['only', 'only', 'only']);
});

test('only channels serving the model to the group', () => {
  const channels = selector([
    { name: 'default-gpt', groups: ['default'] },
    { name: 'vip-gpt', groups: ['vip'], priority: 9 },
    { name: 'vip-other', groups: ['vip'], models: ['other'] },
  ]);
  assert.deepEqual(names(channels.order('gpt', 'default', 1)), ['default-gpt']);
  assert.deepEqual(names(channels.order('gpt', 'vip', 1)), ['vip-gpt']);
  assert.deepEqual(names(channels.order('other', 'default', 2)), []);
  assert.deepEqual(names(channels.order('missing', 'vip', 2)), []);
});

test('keys of a channel are used in turn; model_map renames', () => {
  const channels = selector([{ name: 'multi', keys: ['k1', 'k2', 'k3'], model_map: { gpt: 'gpt-upstream-2024' } }]);
  const [channel] = channels.order('gpt', 'default', 1);
  assert.deepEqual([1, 2, 3, 4, 5].map(() => channels.nextKey(channel)), ['k1', 'k2', 'k3', 'k1', 'k2']);
  assert.equal(channels.upstreamModel(channel, 'gpt'), 'gpt-upstream-2024');
  assert.equal(channels.upstreamModel(channel, 'other'), 'other');
});
