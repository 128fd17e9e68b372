// GET /metrics (issue 18) scraped from a real gateway and parsed strictly: once per HTTP front in
// one process, then through the real supervisor with 2 workers (one scrape sums both). Counts
// match what was called and billed; labels stay bounded; the access log has one line per call.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startMockUpstream, type MockUpstream } from '../../scripts/mock-upstream';
import { call, capturingLogger, FRONTS, startSupervisor, startTestGateway, waitFor, type SupervisedGateway, type TestGateway } from '../helpers/gateway';
import { parsePrometheus, sampleValue } from '../helpers/prometheus';
import { chatConfig, createKey, writeConfigFile, type CreatedKey } from './chat-harness';

const HELLO = [{ role: 'user', content: 'hello' }];

async function scrape(url: string): Promise<ReturnType<typeof parsePrometheus>> {
  const answer = await call(url, 'GET', '/metrics');
  assert.equal(answer.status, 200, answer.text);
  assert.equal(answer.headers['content-type'], 'text/plain; version=0.0.4; charset=utf-8');
  return parsePrometheus(answer.text);
}

for (const front of FRONTS) {
  describe(`metrics and access log (${front} front)`, () => {
    let mock: MockUpstream;
    let gateway: TestGateway;
    let key: CreatedKey;
    const access = capturingLogger('info');
    const chat = (body: Record<string, unknown>, headers: Record<string, string> = { authorization: `Bearer ${key.key}` }) =>
      call(gateway.url, 'POST', '/v1/chat/completions', { headers, body: { messages: HELLO, max_tokens: 8, ...body } });

    before(async () => {
      mock = await startMockUpstream();
      const raw = chatConfig(mock.url);
      raw.retries = 1;
      gateway = await startTestGateway({ front, raw, accessLog: access.log });
      await gateway.gateway.context.store.accounts.topUp(1, 50_000_000);
      key = await createKey(gateway.url, gateway.adminToken, { unlimited_quota: true });
    });
    after(async () => { await gateway?.close(); await mock?.close(); });

    test('requests, durations, tokens, quota and upstream failures add up to what was called and billed', async () => {
      const start = await scrape(gateway.url);
      const okBefore = sampleValue(start, 'tollgate_http_requests_total', { route: '/v1/chat/completions', model: 'mock-chat', status_class: '2xx', dialect: 'openai' });
      for (let index = 0; index < 3; index += 1) assert.equal((await chat({ model: 'mock-chat' })).status, 200);
      assert.equal((await chat({ model: 'mock-chat', stream: true })).status, 200);
      assert.equal((await chat({ model: 'mock-chat' }, { authorization: 'Bearer sk-wrong' })).status, 401);
      const unknownModel = `zz-unknown-${Date.now()}`;
      assert.equal((await chat({ model: unknownModel })).status, 404);
      mock.script({ status: 500 }, 1);
      assert.equal((await chat({ model: 'mock-chat' })).status, 200);   // fails over (retries: 1, the same channel again)
      await gateway.gateway.context.ledger.flush();

      const metrics = await scrape(gateway.url);
      assert.equal(sampleValue(metrics, 'tollgate_http_requests_total', { route: '/v1/chat/completions', model: 'mock-chat', status_class: '2xx', dialect: 'openai' }) - okBefore, 5);
      assert.ok(sampleValue(metrics, 'tollgate_http_requests_total', { route: '/v1/chat/completions', status_class: '4xx' }) >= 2);
      const records = (await gateway.gateway.context.store.usage.list(1, { keyId: key.id }, 0, 100)).items;
      const billed = records.filter((record) => record.model === 'mock-chat');
      assert.equal(sampleValue(metrics, 'tollgate_request_duration_seconds_count', { model: 'mock-chat' }), billed.length);
      assert.equal(sampleValue(metrics, 'tollgate_time_to_first_byte_seconds_count', { model: 'mock-chat' }), billed.filter((record) => record.first_byte_ms !== null).length);
      assert.equal(sampleValue(metrics, 'tollgate_tokens_total', { model: 'mock-chat', direction: 'in' }), billed.reduce((sum, record) => sum + record.prompt_tokens, 0));
      assert.equal(sampleValue(metrics, 'tollgate_tokens_total', { model: 'mock-chat', direction: 'out' }), billed.reduce((sum, record) => sum + record.completion_tokens, 0));
      assert.equal(sampleValue(metrics, 'tollgate_quota_charged_total', { model: 'mock-chat' }), billed.reduce((sum, record) => sum + record.quota, 0));
      assert.equal(sampleValue(metrics, 'tollgate_upstream_failures_total', { channel: 'mock', reason: '5xx' }), 1);
      assert.equal(sampleValue(metrics, 'tollgate_failovers_total'), 1);
      assert.equal(sampleValue(metrics, 'tollgate_upstream_attempts_total', { channel: 'mock' }), 6);
      assert.equal(sampleValue(metrics, 'tollgate_open_streams'), 0);
      assert.equal(sampleValue(metrics, 'tollgate_in_flight_requests'), 0);
      assert.ok(sampleValue(metrics, 'tollgate_ledger_batch_records_count') >= 1);
      assert.ok(sampleValue(metrics, 'tollgate_lease_grants_total') >= 1);
      assert.ok(sampleValue(metrics, 'tollgate_worker_resident_memory_bytes') > 1e6);
      assert.equal(metrics.get('tollgate_event_loop_lag_seconds')?.type, 'gauge');
      assert.equal(metrics.get('tollgate_request_duration_seconds')?.type, 'histogram');
      assert.ok([...metrics.keys()].some((name) => name.endsWith('_requests_total')));

      // bounded labels: no key, id or client text as a label value
      for (const family of metrics.values()) {
        for (const sample of family.samples) {
          for (const [label, value] of Object.entries(sample.labels)) {
            if (label === 'le' || label === 'quantile') continue;
            assert.ok(!value.includes('sk-') && !value.includes(unknownModel) && value !== String(key.id) && value.length < 100, `label value ${value} in ${sample.name}`);
          }
        }
      }
    });

    test('the access log: one line per call with its figures, never a secret; refusals too', async () => {
      access.lines.length = 0;
      assert.equal((await chat({ model: 'mock-chat' })).status, 200);
      assert.equal((await chat({ model: 'mock-chat' }, { authorization: 'Bearer sk-not-a-key' })).status, 401);
      await waitFor(async () => access.lines.length >= 2, 2000);
      const [billed, refused] = access.lines;
      assert.equal(billed.msg, 'call');
      for (const field of ['route', 'model', 'channel', 'status', 'duration_ms', 'ttfb_ms', 'prompt_tokens', 'completion_tokens', 'quota', 'key_id', 'account_id']) {
        assert.ok(field in billed, `access line has ${field}`);
      }
      assert.equal(billed.route, '/v1/chat/completions');
      assert.equal(billed.model, 'mock-chat');
      assert.equal(billed.channel, 'mock');
      assert.equal(billed.status, 200);
      assert.equal(billed.key_id, key.id);
      assert.equal(billed.level, 30);
      assert.equal(refused.status, 401);
      const text = access.text();
      assert.ok(!text.includes(key.key) && !text.includes(key.key.slice(3)) && !text.includes('sk-not-a-key') && !text.includes(gateway.adminToken), 'no secret in the access log');
    });
  });
}

describe('metrics settings', () => {
  test('metrics.enabled false: 404; access_log.enabled false: no access lines', async () => {
    const access = capturingLogger('info');
    const gateway = await startTestGateway({ raw: { metrics: { enabled: false }, access_log: { enabled: false } }, accessLog: access.log });
    try {
      const answer = await call(gateway.url, 'GET', '/metrics');
      assert.equal(answer.status, 404);
      assert.match(answer.json.error.message, /metrics are disabled/);
      assert.equal((await call(gateway.url, 'GET', '/v1/models')).status, 401);
      assert.equal(access.lines.length, 0);
    } finally {
      await gateway.close();
    }
  });

  test('a metrics token that is too short or an unknown metrics field is refused by name at start', async () => {
    const { loadConfig } = await import('../../src/config.js');
    assert.throws(() => loadConfig({ raw: { metrics: { token: 'short' } }, env: {} }), /metrics.token must be 16 to 512 characters/);
    assert.throws(() => loadConfig({ raw: { metrics: { tokn: 'x' } }, env: {} }), /metrics: unknown field "tokn"/);
    assert.throws(() => loadConfig({ raw: { channel_health: { failures: 0 } }, env: {} }), /channel_health.failures must be a number ≥ 1/);
    assert.throws(() => loadConfig({ raw: { channel_health: { cooldown_ms: 5000, max_cooldown_ms: 10 } }, env: {} }), /max_cooldown_ms must be at least/);
  });
});

describe('metrics across 2 worker processes', () => {
  let mock: MockUpstream;
  let supervisor: SupervisedGateway;
  let key: CreatedKey;

  before(async () => {
    mock = await startMockUpstream();
    supervisor = await startSupervisor({ workers: 2, configPath: writeConfigFile(chatConfig(mock.url)), env: { TOLLGATE_LOG_LEVEL: 'info' } });
    const token = supervisor.adminToken();
    const topped = await call(supervisor.url, 'GET', '/api/token/', { token });
    assert.equal(topped.status, 200);
    key = await createKey(supervisor.url, token, { unlimited_quota: true });
  });
  after(async () => { await supervisor?.stop(); await mock?.close(); });

  test('one scrape sums every worker; per-worker series carry the worker slot; a replaced worker counts as a restart', async () => {
    // free calls (the admin account has no balance): 429s, still counted
    const calls = 12;
    await Promise.all(Array.from({ length: calls }, () => call(supervisor.url, 'POST', '/v1/chat/completions', {
      headers: { authorization: `Bearer ${key.key}` }, body: { model: 'mock-chat', messages: HELLO, max_tokens: 8 },
    })));
    const metrics = await scrape(supervisor.url);
    assert.equal(sampleValue(metrics, 'tollgate_http_requests_total', { route: '/v1/chat/completions', model: 'mock-chat' }), calls);
    assert.equal(sampleValue(metrics, 'tollgate_refusals_total', { kind: 'balance' }), calls);
    const rss = metrics.get('tollgate_worker_resident_memory_bytes')!.samples;
    assert.deepEqual(rss.map((sample) => sample.labels.worker).sort(), ['1', '2']);
    assert.equal(sampleValue(metrics, 'tollgate_worker_restarts_total'), 0);
    assert.equal(sampleValue(metrics, 'tollgate_workers'), 2);

    const health = await call(supervisor.url, 'GET', '/healthz');
    process.kill(Number(health.json.pid), 'SIGKILL');
    const restarted = await waitFor(async () => {
      try { return sampleValue(await scrape(supervisor.url), 'tollgate_worker_restarts_total') === 1; } catch { return false; }
    }, 60_000, 200);
    assert.ok(restarted, 'the restart shows in the scrape');
    const after = await waitFor(async () => {
      const families = await scrape(supervisor.url);
      return families.get('tollgate_worker_resident_memory_bytes')!.samples.length === 2 ? families : undefined;
    }, 60_000, 200);
    assert.ok(after, 'both slots report again');
    assert.deepEqual(after.get('tollgate_worker_resident_memory_bytes')!.samples.map((sample) => sample.labels.worker).sort(), ['1', '2']);
  });
});
