// Prices → quota (DESIGN §5): quota = ceil(USD × 500000 × group ratio) where float error never adds
// a unit; checked against exact integer arithmetic.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig, type ModelConfig } from '../../src/config';
import { estimateQuota, isPerCall, perCallQuota, usageQuota, usdToQuota } from '../../src/billing/pricing';

function model(price: ModelConfig['price']): ModelConfig {
  const config = loadConfig({ raw: { models: [{ id: 'm', price }], channels: [] }, env: {} });
  return config.models[0];
}

/** ceil(USD × 500000 × ratio) with USD = (p × input + c × output) / 1e6, as exact integers. */
function exactQuota(input: number, output: number, prompt: number, completion: number, ratio: number): number {
  const micro = (value: number) => BigInt(Math.round(value * 1_000_000));
  const numerator = (BigInt(prompt) * micro(input) + BigInt(completion) * micro(output)) * 500_000n * BigInt(Math.round(ratio * 1000));
  const denominator = 1_000_000n * 1_000_000n * 1000n;
  return Number((numerator + denominator - 1n) / denominator);
}

/** small deterministic PRNG (mulberry32) so a failure is reproducible */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let value = Math.imul(state ^ (state >>> 15), 1 | state);
    value = (value + Math.imul(value ^ (value >>> 7), 61 | value)) ^ value;
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296;
  };
}

test('an exact decimal result is not rounded up by float error', () => {
  // 1640 × 0.15 µUSD = 246 µUSD = 123 quota exactly, but the float product lands just above 123
  assert.equal(Math.ceil((1640 * 0.15 / 1e6) * 500_000), 124, 'naive float arithmetic would charge 124');
  assert.equal(usageQuota(model({ input: 0.15, output: 0.6 }), { prompt_tokens: 1640, completion_tokens: 0 }, 1), 123);
  assert.equal(usageQuota(model({ input: 0.15, output: 0.6 }), { prompt_tokens: 0, completion_tokens: 410 }, 1), 123);
  assert.equal(usageQuota(model({ input: 1.1, output: 4.4 }), { prompt_tokens: 20, completion_tokens: 0 }, 1), 11);
  assert.equal(usageQuota(model({ input: 0.15, output: 0.6 }), { prompt_tokens: 1000, completion_tokens: 0 }, 1), 75);
  assert.equal(usageQuota(model({ input: 0.1, output: 0.3 }), { prompt_tokens: 30, completion_tokens: 10 }, 1), 3);
  assert.equal(usdToQuota(0.1 + 0.2, 1), 150_000, '0.1 + 0.2 USD is 150000 quota, not 150001');
  assert.equal(perCallQuota(model({ per_call: 0.04 }), 3, 1), 60_000);
  assert.equal(perCallQuota(model({ per_call: 0.01 }), 7, 1.1), 38_500);
});

test('any fraction of a unit is charged as a whole unit', () => {
  assert.equal(usageQuota(model({ input: 0.15, output: 0.6 }), { prompt_tokens: 1, completion_tokens: 0 }, 1), 1);
  assert.equal(usageQuota(model({ input: 0.15, output: 0.6 }), { prompt_tokens: 0, completion_tokens: 0 }, 1), 0);
  assert.equal(usageQuota(model({ input: 1.1, output: 4.4 }), { prompt_tokens: 21, completion_tokens: 0 }, 1), 12);
});

test('group ratio multiplies before the ceiling', () => {
  const chat = model({ input: 3, output: 15 });
  assert.equal(usageQuota(chat, { prompt_tokens: 1001, completion_tokens: 60 }, 1), exactQuota(3, 15, 1001, 60, 1));
  assert.equal(usageQuota(chat, { prompt_tokens: 1001, completion_tokens: 60 }, 1.5), exactQuota(3, 15, 1001, 60, 1.5));
  assert.equal(usageQuota(chat, { prompt_tokens: 1001, completion_tokens: 60 }, 0), 0);
});

test('a sweep of prices, token counts and ratios matches exact arithmetic', () => {
  const random = seeded(7);
  const prices = [0.15, 0.6, 1.1, 4.4, 2.5, 10, 3, 15, 0.075, 0.3, 0.05, 1.25, 0.035, 2.19, 60, 120];
  const ratios = [1, 1.5, 0.8, 0.1, 2, 1.2, 0.3, 0.7];
  let checked = 0;
  for (let index = 0; index < 20_000; index += 1) {
    const input = prices[Math.floor(random() * prices.length)];
    const output = prices[Math.floor(random() * prices.length)];
    const ratio = ratios[Math.floor(random() * ratios.length)];
    const prompt = Math.floor(random() * 300_000);
    const completion = Math.floor(random() * 100_000);
    const got = usageQuota(model({ input, output }), { prompt_tokens: prompt, completion_tokens: completion }, ratio);
    assert.equal(got, exactQuota(input, output, prompt, completion, ratio), `${prompt}×${input} + ${completion}×${output} at ratio ${ratio}`);
    checked += 1;
  }
  assert.equal(checked, 20_000);
});

test('cached prompt tokens are priced at cached_input', () => {
  const cached = model({ input: 3, output: 15, cached_input: 0.3 });
  // 1000 prompt tokens, 800 of them cached: 200 × 3 + 800 × 0.3 = 840 µUSD → 420 quota
  assert.equal(usageQuota(cached, { prompt_tokens: 1000, completion_tokens: 0, cached_tokens: 800 }, 1), 420);
  // more cached than prompt cannot make it cheaper than all-cached
  assert.equal(usageQuota(cached, { prompt_tokens: 100, completion_tokens: 0, cached_tokens: 5000 }, 1), 15);
});

test('estimate = prompt estimate + output cap; per-call detection', () => {
  const chat = model({ input: 0.15, output: 0.6 });
  assert.equal(estimateQuota(chat, 100, 4096, 1), exactQuota(0.15, 0.6, 100, 4096, 1));
  assert.equal(isPerCall(chat), false);
  assert.equal(isPerCall(model({ per_call: 0.02 })), true);
});
