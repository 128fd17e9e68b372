import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, EMBEDDED_CONFIG, loadConfig, redacted } from '../../src/config';
import { workerV8Flags } from '../../src/supervisor';
import { execFileSync } from 'node:child_process';
import { reloadable, restartRequired } from '../../src/ops/reload';

const chatModel = { id: 'gpt-test', price: { input: 1, output: 2 } };
const channel = { name: 'main', type: 'openai', base_url: 'http://127.0.0.1:9', keys: ['k'], models: ['gpt-test'] };
const env = {};

function refused(raw: Record<string, unknown>, message: RegExp, environment: NodeJS.ProcessEnv = env): void {
  assert.throws(() => loadConfig({ raw, env: environment }), (error: unknown) => {
    assert.ok(error instanceof ConfigError, String(error));
    assert.match(error.message, message);
    return true;
  });
}

test('the embedded config loads: simulator models and one simulator channel', () => {
  const config = loadConfig({ env });
  assert.deepEqual(config.models.map((model) => model.id), EMBEDDED_CONFIG.models.map((model) => model.id));
  assert.equal(config.channels[0].type, 'simulator');
  assert.equal(config.video.vendor, 'veo');
});

test('each bad entry is refused with an error that names it', () => {
  refused({ models: [chatModel], channels: [{ ...channel, type: 'grpc' }] }, /channel "main": unknown channel type "grpc"/);
  refused({ models: [chatModel], channels: [{ ...channel, models: ['gpt-missing'] }] }, /channel "main" lists model "gpt-missing", which is not in models/);
  refused({ models: [{ id: 'free' }] }, /model "free" has no price/);
  refused({ models: [{ id: 'half', price: { input: 1 } }] }, /model "half" has no price/);
  refused({ models: [{ ...chatModel, groups: ['vip'] }] }, /model "gpt-test" names unknown group "vip"/);
  refused({ models: [chatModel], channels: [{ ...channel, groups: ['vip'] }] }, /channel "main" names unknown group "vip"/);
  refused({ models: [{ ...chatModel, kind: 'audio' }] }, /model "gpt-test": kind must be chat, image, video or embedding/);
  refused({ models: [chatModel, chatModel] }, /model "gpt-test" is listed twice/);
  refused({ models: [chatModel], channels: [{ ...channel, base_url: 'not a url' }] }, /channel "main": base_url is not a valid URL/);
  const imageModel = { id: 'img', kind: 'image', price: { per_call: 0.04 } };
  refused({ models: [{ ...imageModel, image: { sizes: '1024x1024' } }] }, /model "img"\.image\.sizes must be an array of strings/);
  refused({ models: [{ ...imageModel, image: { quality_multipliers: { hd: 'two' } } }] }, /model "img"\.image\.quality_multipliers\.hd must be a number/);
  refused({ models: [{ ...imageModel, image: { url_inputs: 'yes' } }] }, /model "img"\.image\.url_inputs must be true or false/);
});

test('"$ENV" secrets are read from the environment and never shown by redacted()', () => {
  const raw = { models: [chatModel], channels: [{ ...channel, keys: ['$TEST_UPSTREAM_KEY', 'plain'] }] };
  const config = loadConfig({ raw, env: { TEST_UPSTREAM_KEY: 'secret-value' } });
  assert.deepEqual(config.channels[0].keys, ['secret-value', 'plain']);
  assert.doesNotMatch(JSON.stringify(redacted(config)), /secret-value|plain/);
  refused(raw, /channel "main"\.keys\[0\] refers to environment variable TEST_UPSTREAM_KEY, which is not set/);
});

test('model flags and environment overrides are read', () => {
  const raw = {
    listen: { port: 1234 },
    models: [{ id: 'o-test', reasoning: true, multimodal: true, json_mode: true, max_output_tokens: 100000, price: { input: 1, output: 4 } }],
  };
  const config = loadConfig({ raw, env: { PORT: '4321', TOLLGATE_WORKERS: '3' } });
  const model = config.models[0];
  assert.equal(model.kind, 'chat');
  assert.deepEqual([model.reasoning, model.multimodal, model.json_mode, model.max_output_tokens], [true, true, true, 100000]);
  assert.equal(config.listen.port, 4321);
  assert.equal(config.workers, 3);
  refused(raw, /TOLLGATE_WORKERS\/workers must be an integer/, { TOLLGATE_WORKERS: 'many' });
});

test('a config file that is not JSON names the file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-config-'));
  const path = join(dir, 'config.json');
  writeFileSync(path, '{ "models": [');
  try {
    assert.throws(() => loadConfig({ path, env }), (error: unknown) => error instanceof ConfigError && error.message.includes(`config file ${path} is not valid JSON`));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an unknown field anywhere is refused by name (a typo never leaves a default silently in place)', () => {
  refused({ listn: { port: 1 } }, /config: unknown field "listn"/);
  refused({ limits: { max_keys_per_acount: 3 } }, /limits: unknown field "max_keys_per_acount"/);
  refused({ limits: { reveal: { windowSeconds: 60 } } }, /limits\.reveal: unknown field "windowSeconds"/);
  refused({ groups: { default: { ration: 1 } } }, /groups\.default: unknown field "ration"/);
  refused({ models: [{ ...chatModel, reasonning: true }] }, /model "gpt-test": unknown field "reasonning"/);
  refused({ models: [{ ...chatModel, price: { inptu: 1, input: 1, output: 2 } }] }, /model "gpt-test"\.price: unknown field "inptu"/);
  refused({ models: [chatModel], channels: [{ ...channel, timeouts: { connectMs: 5 } }] }, /channel "main"\.timeouts: unknown field "connectMs"/);
  refused({ video: { vendr: 'x' } }, /video: unknown field "vendr"/);
  refused({ limits: 5 }, /limits must be an object/);
  refused({ groups: null }, /groups must be an object/);
  // fields starting with _ are comments
  assert.equal(loadConfig({ raw: { _comment: 'mine', limits: { _why: 'x', max_keys_per_account: 3 } }, env }).limits.maxKeysPerAccount, 3);
});

test('redacted() prints the config in the file shape: fed back, it loads to the same config', () => {
  const raw = {
    workers: 1, dataDir: '/tmp/tollgate-config-round-trip',
    groups: { default: { ratio: 1 }, vip: { ratio: 0.8, rpm: 60, concurrency: 4 } },
    models: [chatModel, { id: 'img', kind: 'image', price: { per_call: 0.04 }, image: { sizes: ['1024x1024'], url_inputs: true } }],
    channels: [{ ...channel, timeouts: { connect_ms: 5, first_byte_ms: 6, idle_ms: 7 }, model_map: { 'gpt-test': 'up' } }],
    retries: 1,
    limits: { max_keys_per_account: 3, reveal: { count: 2, window_seconds: 60 }, body_timeout_ms: 1234 },
    video: { vendor: 'vid', poll_interval_ms: 50 },
  };
  const config = loadConfig({ raw, env });
  const shown = JSON.parse(JSON.stringify(redacted(config))) as Record<string, unknown> & { channels: { keys: string[] }[] };
  assert.deepEqual(shown.channels[0].keys, ['[redacted]']);
  shown.channels[0].keys = ['k'];
  assert.deepEqual(loadConfig({ raw: shown, env }), config);
});

test('low_memory: off by default; on, workers start with the low-memory young generation (unless worker_semi_space_mb says otherwise) and one V8 platform thread; not a boolean is refused by name', () => {
  const plain = loadConfig({ env });
  assert.equal(plain.lowMemory, false);
  assert.ok(!workerV8Flags(plain.workerSemiSpaceMb, plain.lowMemory).includes('--v8-pool-size=1'));
  const small = loadConfig({ raw: { ...EMBEDDED_CONFIG, low_memory: true }, env });
  assert.equal(small.lowMemory, true);
  assert.equal(small.workerSemiSpaceMb, 1);
  assert.deepEqual(workerV8Flags(small.workerSemiSpaceMb, small.lowMemory), ['--min-semi-space-size=1', '--max-semi-space-size=16', '--no-allocation-site-pretenuring', '--v8-pool-size=1', '--no-concurrent-recompilation', '--liftoff-only']);
  assert.equal(loadConfig({ raw: { ...EMBEDDED_CONFIG, low_memory: true, worker_semi_space_mb: 8 }, env }).workerSemiSpaceMb, 8);
  if (!process.versions.bun) {
    // V8 ignores a flag it does not know; --v8-pool-size is Node's own
    const known = execFileSync(process.execPath, ['--v8-options'], { encoding: 'utf8' });
    for (const flag of workerV8Flags(1, true).filter((entry) => !entry.startsWith('--v8-pool-size'))) {
      assert.match(known, new RegExp(`^\\s+--${flag.replace(/^--(no-)?/, '').replace(/=.*/, '')} `, 'm'), flag);
    }
  }
  assert.equal((redacted(small) as { low_memory: boolean }).low_memory, true, 'shown in the file\'s own shape');
  for (const bad of ['yes', 1, null]) {
    assert.throws(() => loadConfig({ raw: { ...EMBEDDED_CONFIG, low_memory: bad }, env }),
      (error: unknown) => error instanceof ConfigError && error.message.includes('low_memory'), String(bad));
  }
});

test('worker_semi_space_mb: the young generation workers start with; 16 by default, 1 the low-memory choice, out of range refused by name', () => {
  assert.equal(loadConfig({ env }).workerSemiSpaceMb, 16);
  assert.deepEqual(workerV8Flags(16).slice(0, 2), ['--min-semi-space-size=16', '--max-semi-space-size=16']);
  assert.deepEqual(workerV8Flags(32).slice(0, 2), ['--min-semi-space-size=32', '--max-semi-space-size=32']);
  const small = loadConfig({ raw: { ...EMBEDDED_CONFIG, worker_semi_space_mb: 1 }, env });
  assert.equal(small.workerSemiSpaceMb, 1);
  assert.deepEqual(workerV8Flags(small.workerSemiSpaceMb).slice(0, 2), ['--min-semi-space-size=1', '--max-semi-space-size=16']);
  assert.equal((redacted(small) as { worker_semi_space_mb: number }).worker_semi_space_mb, 1, 'shown in the file\'s own shape');
  for (const bad of [0, 2.5, 300, 'big']) {
    assert.throws(() => loadConfig({ raw: { ...EMBEDDED_CONFIG, worker_semi_space_mb: bad }, env }),
      (error: unknown) => error instanceof ConfigError && error.message.includes('worker_semi_space_mb'), String(bad));
  }
});

test('an embedding model is priced per input token only', () => {
  const config = loadConfig({ raw: { models: [{ id: 'embed', kind: 'embedding', price: { input: 0.02 } }] }, env });
  assert.equal(config.models[0].kind, 'embedding');
  refused({ models: [{ id: 'embed', kind: 'embedding', price: { input: 0.02, output: 1 } }] }, /model "embed" is an embedding model: give price.input/);
  refused({ models: [{ id: 'embed', kind: 'embedding', price: { per_call: 0.01 } }] }, /model "embed" is an embedding model/);
});

test('limits.pending_body_bytes: 256 MiB by default, never below the largest body limit; below it is refused by name', () => {
  const env = {};
  assert.equal(loadConfig({ raw: EMBEDDED_CONFIG, env }).limits.pendingBodyBytes, 256 * 1024 * 1024);
  // a larger body limit raises the default with it
  assert.equal(loadConfig({ raw: { ...EMBEDDED_CONFIG, limits: { multipart_bytes: 300 * 1024 * 1024 } }, env }).limits.pendingBodyBytes, 300 * 1024 * 1024);
  assert.equal(loadConfig({ raw: { ...EMBEDDED_CONFIG, limits: { pending_body_bytes: 100 * 1024 * 1024, multipart_bytes: 1024 * 1024, model_body_bytes: 1024 * 1024 } }, env }).limits.pendingBodyBytes, 100 * 1024 * 1024);
  assert.throws(() => loadConfig({ raw: { ...EMBEDDED_CONFIG, limits: { pending_body_bytes: 1024 * 1024 } }, env }),
    (error: unknown) => error instanceof ConfigError && /limits\.pending_body_bytes \(1048576\) must be at least the largest body limit \(67108864 bytes\)/.test(error.message));
  assert.throws(() => loadConfig({ raw: { ...EMBEDDED_CONFIG, limits: { pending_body_bytes: 'lots' } }, env }),
    (error: unknown) => error instanceof ConfigError && error.message.includes('pending_body_bytes'));
});

test('a reload that changes the HTTP front\'s limits says they need a restart, and keeps the running ones', () => {
  const env = {};
  const running = loadConfig({ raw: EMBEDDED_CONFIG, env });
  const next = loadConfig({ raw: { ...EMBEDDED_CONFIG, limits: { pending_body_bytes: 512 * 1024 * 1024, body_timeout_ms: 5_000, model_body_bytes: 8 * 1024 * 1024 } }, env });
  assert.deepEqual(restartRequired(running, next), ['limits.body_timeout_ms', 'limits.pending_body_bytes']);
  const applied = reloadable(running, next);
  assert.equal(applied.limits.pendingBodyBytes, running.limits.pendingBodyBytes);
  assert.equal(applied.limits.bodyTimeoutMs, running.limits.bodyTimeoutMs);
  assert.equal(applied.limits.modelBodyBytes, 8 * 1024 * 1024, 'a route\'s body limit applies at once');
});
