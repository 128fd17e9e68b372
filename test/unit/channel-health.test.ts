// ChannelHealth on a fake clock: cool-down after N consecutive retryable failures, doubling up to the
// cap, back to healthy on a success; refused keys skipped in turn; merged reports of several workers.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig } from '../../src/config';
import { upstreamError, GatewayError } from '../../src/errors';
import { ChannelHealth, mergeChannelReports } from '../../src/relay/channel-health';

const config = loadConfig({
  raw: {
    models: [{ id: 'm', price: { input: 1, output: 1 } }],
    channels: [{ name: 'a', type: 'openai', base_url: 'http://127.0.0.1:9', keys: ['k0', 'k1', 'k2'], models: ['m'] }],
  },
  env: {},
});
const channel = config.channels[0];
const auth = new GatewayError({ status: 502, type: 'api_error', code: 'upstream_auth_failed', message: 'refused', retryable: true });

function setup() {
  let now = 1_000_000;
  const events: string[] = [];
  const health = new ChannelHealth(config.channels, { failures: 3, cooldownMs: 1000, maxCooldownMs: 3000 }, {
    cooling: (name, until) => events.push(`cool ${name} ${until - now}`),
    keyRefused: (name, index) => events.push(`refused ${name} ${index}`),
  }, () => now);
  return { health, events, advance: (ms: number) => { now += ms; } };
}

test('N consecutive retryable failures cool the channel; a success before that resets the count', () => {
  const { health, events } = setup();
  health.failure(channel, 0, upstreamError(502, 'x'));
  health.failure(channel, 0, upstreamError(502, 'x'));
  health.success(channel, 10);
  health.failure(channel, 0, upstreamError(502, 'x'));
  health.failure(channel, 0, upstreamError(502, 'x'));
  assert.equal(health.usable(channel), true);
  health.failure(channel, 0, upstreamError(502, 'x'));
  assert.equal(health.usable(channel), false);
  assert.deepEqual(events, ['cool a 1000']);
  // non-retryable errors (the client's own 400s) never count
  const fresh = setup();
  for (let index = 0; index < 5; index += 1) fresh.health.failure(channel, 0, upstreamError(400, 'bad', 'upstream_bad_request', false));
  assert.equal(fresh.health.usable(channel), true);
});

test('the cool-down doubles while the channel keeps failing, capped; a success ends it', () => {
  const { health, events, advance } = setup();
  for (let index = 0; index < 3; index += 1) health.failure(channel, 0, upstreamError(502, 'x'));
  advance(1001);
  assert.equal(health.usable(channel), true, 'tried again after the cool-down');
  health.failure(channel, 0, upstreamError(502, 'x'));
  advance(2001);
  health.failure(channel, 0, upstreamError(502, 'x'));
  advance(3001);
  health.failure(channel, 0, upstreamError(502, 'x'));
  assert.deepEqual(events, ['cool a 1000', 'cool a 2000', 'cool a 3000', 'cool a 3000']);
  advance(3001);
  health.success(channel, 5);
  assert.equal(health.report()[0].state, 'healthy');
  for (let index = 0; index < 3; index += 1) health.failure(channel, 0, upstreamError(502, 'x'));
  assert.equal(events.at(-1), 'cool a 1000', 'back to the base cool-down after a success');
});

test('a refused key leaves the rotation once; all refused is key_refused; reset brings them back', () => {
  const { health, events } = setup();
  health.failure(channel, 1, auth);
  health.failure(channel, 1, auth);
  assert.deepEqual(events, ['refused a 1']);
  assert.deepEqual(Array.from({ length: 4 }, () => health.nextKeyIndex(channel)), [0, 2, 0, 2]);
  health.failure(channel, 0, auth);
  health.failure(channel, 2, auth);
  assert.equal(health.report()[0].state, 'key_refused');
  assert.equal(health.usable(channel), false);
  assert.equal(health.reset('a'), true);
  assert.equal(health.usable(channel), true);
  assert.deepEqual(health.report()[0].keys.map((key) => key.state), ['ok', 'ok', 'ok']);
  assert.equal(health.reset('nope'), false);
});

test('reports of several workers merge: counts summed, the worst state, the latest cool-down, one p50', () => {
  const first = setup();
  const second = setup();
  first.health.success(channel, 10);
  first.health.success(channel, 30);
  for (let index = 0; index < 3; index += 1) second.health.failure(channel, 0, upstreamError(502, 'x'));
  second.health.failure(channel, 2, auth);
  const [merged] = mergeChannelReports([first.health.report(), second.health.report()]);
  assert.equal(merged.state, 'cooling');
  assert.equal(merged.success, 2);
  assert.equal(merged.failure, 4);
  assert.equal(merged.p50_ms, 20);
  assert.deepEqual(merged.keys.map((key) => key.state), ['ok', 'ok', 'refused']);
  assert.ok(merged.cooling_until !== null);
});
