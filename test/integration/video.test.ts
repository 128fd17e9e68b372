// The deprecated legacy video task API (spec §2.7, §3.2, §4.7, §7.3) with `fetch`: submit → poll →
// completed or failed (refunded), its error codes, Deprecation/Sunset headers, the off switch, and
// a `video-legacy` channel against the mock upstream. The supervisor's poller is called directly.
import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import { Client } from 'pg';
import { startMockUpstream, type MockUpstream } from '../../scripts/mock-upstream';
import { EMBEDDED_CONFIG } from '../../src/config';
import { createLogger } from '../../src/log';
import { pollVideoTasksOnce } from '../../src/relay/video-poller';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { addAccount, call, cliJson, startSupervisor, startTestGateway, STORE_SETUPS, stopClusterEngines, tempDir, waitFor, type SupervisedGateway, type TestGateway } from '../helpers/gateway';
import { assertMoneyInvariants, moneySnapshot, type MoneySnapshot } from '../helpers/money';

const PUBLIC_URL = 'https://gateway.example.test';
const SUNSET = 'Thu, 31 Dec 2026 00:00:00 GMT';
const VEO3_QUOTA = 250_000;          // 0.5 USD
const VEO3_PRO_QUOTA = 500_000;      // 1 USD
const ACCOUNT_TOPUP = 100_000_000;
const log = createLogger('error');

interface VideoAnswer { status: number; headers: Headers; body: any }

function testConfig(mockUrl: string, video: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    ...EMBEDDED_CONFIG,
    publicUrl: PUBLIC_URL,
    video,
    channels: [
      { ...EMBEDDED_CONFIG.channels[0], models: EMBEDDED_CONFIG.channels[0].models.filter((model) => model !== 'veo3-pro'),
        simulator: { first_token_delay_ms: 0, tokens_per_second: 0 } },
      { name: 'legacy', type: 'video-legacy', base_url: mockUrl, keys: ['video-key'], models: ['veo3-pro'], model_map: { 'veo3-pro': 'upstream-veo' } },
    ],
  };
}

async function createKey(gateway: TestGateway, token: string, name: string, remainQuota: number): Promise<{ id: number; key: string }> {
  const created = await call(gateway.url, 'POST', '/api/token/', { token, body: { name, remain_quota: remainQuota } });
  assert.equal(created.json?.success, true, created.text);
  const revealed = await call(gateway.url, 'POST', `/api/token/${created.json.data.id}/key`, { token });
  return { id: created.json.data.id, key: revealed.json.data.key };
}

function assertDeprecated(answer: VideoAnswer): void {
  assert.equal(answer.headers.get('deprecation'), 'true');
  assert.equal(answer.headers.get('sunset'), SUNSET);
}

function assertVideoError(answer: VideoAnswer, status: number, code: string, field?: string): void {
  assert.equal(answer.status, status, JSON.stringify(answer.body));
  assert.equal(answer.body.success, false);
  assert.equal(answer.body.error_code, code);
  assert.equal(typeof answer.body.message, 'string');
  assert.notEqual(answer.body.message, '');
  assert.equal(typeof answer.body.details, 'object');
  if (field !== undefined) assert.equal(answer.body.details.field, field);
  assertDeprecated(answer);
}

after(stopClusterEngines);

for (const { front, backend, label, skip } of STORE_SETUPS) describe(`legacy video task API (${label})`, { skip }, () => {
  let mock: MockUpstream;
  let moneyBefore: MoneySnapshot;
  let gateway: TestGateway;
  let key: { id: number; key: string };

  const context = () => gateway.gateway.context;
  const pollOnce = (now?: number) => pollVideoTasksOnce(context().store, context().config, context().providers, log, { now });
  const request = async (method: 'GET' | 'POST', path: string, options: { key?: string; body?: unknown; base?: string } = {}): Promise<VideoAnswer> => {
    const headers: Record<string, string> = { authorization: `Bearer ${options.key ?? key.key}` };
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${options.base ?? gateway.url}${path}`, {
      method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
    return { status: response.status, headers: response.headers, body: await response.json() };
  };
  const submit = (body: unknown, submitKey?: string) => request('POST', '/veo/v1/api/video/submit', { body, key: submitKey });
  const status = (taskId: string, statusKey?: string) => request('GET', `/veo/v1/api/video/status/${encodeURIComponent(taskId)}`, { key: statusKey });
  const money = async () => {
    const store = context().store;
    return { remain: (await store.keys.byId(key.id))!.remain_quota, used: (await store.keys.byId(key.id))!.used_quota, balance: (await store.accounts.get(1))!.balance };
  };
  const assertUsedEqualsRecords = async () => {
    const store = context().store;
    assert.equal((await store.keys.byId(key.id))!.used_quota, (await store.usage.sumForKey(1, key.id)).quota, 'used_quota is the sum of the records');
  };

  before(async () => {
    mock = await startMockUpstream({ apiKeys: ['video-key'] });
    gateway = await startTestGateway({ front, backend, raw: testConfig(mock.url) });
    await context().store.accounts.topUp(1, ACCOUNT_TOPUP);
    key = await createKey(gateway, gateway.adminToken, 'video', 10_000_000);
  });
  after(async () => {
    await gateway?.close();
    await mock?.close();
  });
  beforeEach(async () => {
    mock.reset();
    await context().ledger.flush();
    moneyBefore = await moneySnapshot(context().store);
  });
  afterEach(async (test) => {
    await context().ledger.flush();
    await assertMoneyInvariants(context().store, moneyBefore, test.name);
  });

  test('submit → processing → video_generating → completed with result.video_url, charged once', async () => {
    const start = await money();
    const submitted = await submit({ prompt: 'a paper boat on a river', images: ['https://example.invalid/boat.png'] });
    assert.equal(submitted.status, 200, JSON.stringify(submitted.body));
    assertDeprecated(submitted);
    assert.equal(submitted.body.success, true);
    const { taskId, pollingUrl, status: state, message } = submitted.body.data;
    assert.match(taskId, /^veo3:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'default model veo3');
    assert.equal(pollingUrl, `${PUBLIC_URL}/veo/v1/api/video/status/${taskId}`);
    assert.equal(state, 'processing');
    assert.equal(typeof message, 'string');
    const charged = await money();
    assert.equal(charged.remain, start.remain - VEO3_QUOTA, 'charged on submit');
    assert.equal(charged.balance, start.balance - VEO3_QUOTA);

    const first = await status(taskId);
    assert.equal(first.status, 200);
    assertDeprecated(first);
    assert.equal(first.body.data.status, 'processing');
    assert.equal(first.body.data.upstreamData.status, 'image_downloading');
    assert.deepEqual(first.body.data.upstreamData.images, [{ status: 'pending', url: 'https://example.invalid/boat.png' }]);
    assert.deepEqual(Object.keys(first.body.data.progress).sort(), ['maxRetries', 'retryCount', 'upstreamStatus']);

    await pollOnce();
    const second = await status(taskId);
    assert.equal(second.body.data.status, 'processing');
    assert.equal(second.body.data.upstreamData.status, 'video_generating');

    await pollOnce();
    const done = await status(taskId);
    assert.equal(done.body.data.status, 'completed');
    assert.match(done.body.data.result.video_url, /^https:\/\/.+\.mp4$/);
    assert.equal(typeof done.body.data.result.video_media_id, 'string');
    assert.equal((await money()).remain, charged.remain, 'completion costs nothing more');
    const records = (await context().store.usage.list(1, { keyId: key.id }, 0, 10)).items;
    assert.equal(records[0].endpoint, 'video.submit');
    assert.equal(records[0].quota, VEO3_QUOTA);
    await assertUsedEqualsRecords();
  });

  test('a prompt containing "fail" ends failed and the charge is refunded to key and account', async () => {
    const start = await money();
    const submitted = await submit({ prompt: 'this one will fail', model: 'veo3-fast' });
    assert.equal(submitted.status, 200);
    const { taskId } = submitted.body.data;
    assert.equal((await money()).remain, start.remain - VEO3_QUOTA / 2);
    await pollOnce();
    await pollOnce();
    const failed = await status(taskId);
    assert.equal(failed.body.data.status, 'failed');
    assert.match(failed.body.data.message, /fail/);
    assert.equal(failed.body.data.result, undefined);
    assert.deepEqual((await money()), start, 'remain_quota, used_quota and balance are back');
    const refund = (await context().store.usage.list(1, { keyId: key.id }, 0, 1)).items[0];
    assert.equal(refund.endpoint, 'video.refund');
    assert.equal(refund.quota, -VEO3_QUOTA / 2);
    await assertUsedEqualsRecords();
    await pollOnce();
    assert.deepEqual((await money()), start, 'a finished task is never refunded twice');
  });

  test('a failed task charged under a cap its owner has set since: the refund goes back to the account and leaves remain_quota as the owner set it', async () => {
    const own = await createKey(gateway, gateway.adminToken, 'video-recapped', 10_000_000);
    const balanceBefore = (await context().store.accounts.get(1))!.balance;
    const submitted = await submit({ prompt: 'this one will fail too', model: 'veo3-fast' }, own.key);
    assert.equal(submitted.status, 200, JSON.stringify(submitted.body));
    const object = (await call(gateway.url, 'GET', `/api/token/${own.id}`, { token: gateway.adminToken })).json.data;
    delete object.key;
    const updated = await call(gateway.url, 'PUT', '/api/token/', { token: gateway.adminToken, body: { ...object, remain_quota: 1_000 } });
    assert.equal(updated.json.success, true, updated.text);
    await pollOnce();
    await pollOnce();
    assert.equal((await status(submitted.body.data.taskId, own.key)).body.data.status, 'failed');
    const after = (await context().store.keys.byId(own.id))!;
    assert.deepEqual([after.remain_quota, after.used_quota], [1_000, 0], 'the key has what its owner set, and used nothing');
    assert.equal((await context().store.accounts.get(1))!.balance, balanceBefore, 'the account has its money back');
  });

  test('a task not finished within timeoutHours fails and is refunded', async () => {
    const start = await money();
    const { taskId } = (await submit({ prompt: 'slow one' })).body.data;
    await pollOnce(Date.now() + 24 * 3_600_000 + 1);
    const timedOut = await status(taskId);
    assert.equal(timedOut.body.data.status, 'failed');
    assert.match(timedOut.body.data.message, /timed out/);
    assert.deepEqual((await money()), start);
    await assertUsedEqualsRecords();
  });

  test('INVALID_PROMPT, INVALID_MODEL and more than 5 images are 400 with details.field; nothing is charged', async () => {
    const start = await money();
    assertVideoError(await submit({}), 400, 'INVALID_PROMPT', 'prompt');
    assertVideoError(await submit({ prompt: '   ' }), 400, 'INVALID_PROMPT', 'prompt');
    assertVideoError(await submit({ prompt: 'x', model: 'sora' }), 400, 'INVALID_MODEL', 'model');
    assertVideoError(await submit({ prompt: 'x', model: 'sim-gpt-mini' }), 400, 'INVALID_MODEL', 'model');
    const images = Array.from({ length: 6 }, (_, index) => `https://example.invalid/${index}.png`);
    const tooMany = await submit({ prompt: 'x', images });
    assertVideoError(tooMany, 400, tooMany.body.error_code, 'images');
    assert.match(tooMany.body.message, /at most 5 images/);
    assert.deepEqual((await money()), start);
  });

  test('a key cap or balance too low is QUOTA_EXCEEDED', async () => {
    const poor = await createKey(gateway, gateway.adminToken, 'poor', VEO3_QUOTA - 1);
    const answer = await submit({ prompt: 'x' }, poor.key);
    assertVideoError(answer, 400, 'QUOTA_EXCEEDED');
    assert.match(answer.body.message, /quota/);
  });

  test('a missing or invalid key is 401', async () => {
    assertVideoError(await submit({ prompt: 'x' }, 'sk-nope'), 401, 'UNAUTHORIZED');
    assertVideoError(await status('veo3:00000000-0000-0000-0000-000000000000', 'sk-nope'), 401, 'UNAUTHORIZED');
  });

  test('an unknown path or a wrong method under the video prefix is answered in the video envelope, deprecated', async () => {
    for (const [method, path, status, code] of [['GET', '/veo/v1/api/video/nothing', 404, 'NOT_FOUND'], ['GET', '/veo/v1/api/video/submit', 405, 'METHOD_NOT_ALLOWED']] as const) {
      const response = await fetch(`${gateway.url}${path}`, { method });
      const body = await response.json() as any;
      assert.equal(response.status, status);
      assert.equal(body.success, false);
      assert.equal(body.error_code, code);
      assert.equal(response.headers.get('deprecation'), 'true');
      assert.equal(response.headers.get('sunset'), SUNSET);
    }
  });

  test("an unknown task or another account's task is TASK_NOT_FOUND", async () => {
    const { taskId } = (await submit({ prompt: 'mine' })).body.data;
    const other = await addAccount(gateway, 'other-video');
    await context().store.accounts.topUp(other.id, ACCOUNT_TOPUP);
    const theirKey = await createKey(gateway, other.token, 'theirs', 10_000_000);
    assertVideoError(await status(taskId, theirKey.key), 400, 'TASK_NOT_FOUND', 'taskId');
    assertVideoError(await status('veo3:00000000-0000-0000-0000-000000000000'), 400, 'TASK_NOT_FOUND', 'taskId');
    assert.equal((await status(taskId)).status, 200, 'the owner still sees it');
  });

  test('a video-legacy channel submits and polls the upstream with its own key and model name', async () => {
    const start = await money();
    const submitted = await submit({ prompt: 'a comet', model: 'veo3-pro', enhance_prompt: true, images: ['https://example.invalid/c.png'] });
    assert.equal(submitted.status, 200, JSON.stringify(submitted.body));
    const { taskId } = submitted.body.data;
    assert.match(taskId, /^veo3-pro:/);
    assert.equal((await money()).remain, start.remain - VEO3_PRO_QUOTA);
    const upstreamSubmit = mock.requests.find((recorded) => recorded.path === '/veo/v1/api/video/submit');
    assert.ok(upstreamSubmit);
    assert.equal(upstreamSubmit.headers.authorization, 'Bearer video-key');
    assert.deepEqual(upstreamSubmit.body, { prompt: 'a comet', model: 'upstream-veo', enhance_prompt: true, images: ['https://example.invalid/c.png'] });

    await pollOnce();
    const generating = await status(taskId);
    assert.equal(generating.body.data.status, 'processing');
    assert.equal(generating.body.data.upstreamData.status, 'image_downloading');
    assert.match(generating.body.data.upstreamData.enhanced_prompt, /^a comet, /);
    for (let poll = 0; poll < 2; poll += 1) await pollOnce();
    const done = await status(taskId);
    assert.equal(done.body.data.status, 'completed');
    assert.equal(done.body.data.result.video_url, `${mock.url}/files/video.mp4`);
    const polls = mock.requests.filter((recorded) => recorded.path.startsWith('/veo/v1/api/video/status/'));
    assert.equal(polls.length, 3);
    assert.ok(polls.every((recorded) => recorded.headers.authorization === 'Bearer video-key'));
  });

  test('a video-legacy task that fails upstream, or whose status cannot be read, is refunded', async () => {
    const start = await money();
    const failing = (await submit({ prompt: 'please fail', model: 'veo3-pro' })).body.data.taskId;
    for (let poll = 0; poll < 3; poll += 1) await pollOnce();
    const failed = await status(failing);
    assert.equal(failed.body.data.status, 'failed');
    assert.match(failed.body.data.message, /safety filter/);
    assert.deepEqual((await money()), start);

    const unreadable = (await submit({ prompt: 'flaky upstream', model: 'veo3-pro' })).body.data.taskId;
    mock.script({ status: 503 }, 100);
    const maxRetries = (await status(unreadable)).body.data.progress.maxRetries;
    for (let poll = 0; poll < maxRetries - 1; poll += 1) await pollOnce();
    const retrying = await status(unreadable);
    assert.equal(retrying.body.data.status, 'processing');
    assert.equal(retrying.body.data.progress.retryCount, maxRetries - 1);
    await pollOnce();
    const gaveUp = await status(unreadable);
    assert.equal(gaveUp.body.data.status, 'failed');
    assert.match(gaveUp.body.data.message, /could not be read/);
    assert.deepEqual((await money()), start);
    await assertUsedEqualsRecords();
  });

  test('an upstream that refuses the submit is 500 UPSTREAM_ERROR and nothing is charged', async () => {
    const start = await money();
    mock.script({ status: 500 }, 10);
    const answer = await submit({ prompt: 'x', model: 'veo3-pro' });
    assertVideoError(answer, 500, 'UPSTREAM_ERROR');
    assert.doesNotMatch(answer.body.message, /video-key/, 'the channel key never appears');
    await context().ledger.flush();
    assert.deepEqual((await money()), start);
    await assertUsedEqualsRecords();
  });

  test('a submit whose charge the database refuses: 500 STORE_UNAVAILABLE, no task kept, nothing refunded, and the money still agrees', { skip: backend !== 'postgres' }, async () => {
    const sql = new Client({ connectionString: (context().config.store as { url: string }).url });
    await sql.connect();
    try {
      // the database refuses the submit's usage row as a check violation (SQLSTATE 23514), as it would a value it cannot hold
      await sql.query(`CREATE FUNCTION refuse_video_rows() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.endpoint = 'video.submit' THEN RAISE EXCEPTION 'refused by the test' USING ERRCODE = '23514'; END IF; RETURN NEW; END $$`);
      await sql.query('CREATE TRIGGER refuse_video_rows BEFORE INSERT ON usage_records FOR EACH ROW EXECUTE FUNCTION refuse_video_rows()');
      const start = await money();
      const tasksBefore = (await sql.query('SELECT count(*)::integer AS count FROM video_tasks')).rows[0].count;
      const submitted = await submit({ prompt: 'a lighthouse in fog' });
      assertVideoError(submitted, 500, 'STORE_UNAVAILABLE');
      assert.match(submitted.body.message, /charge/);
      assert.equal((await sql.query('SELECT count(*)::integer AS count FROM video_tasks')).rows[0].count, tasksBefore, 'no task kept');
      await context().ledger.flush();
      assert.deepEqual(await money(), start, 'nothing charged and nothing refunded');
    } finally {
      await sql.query('DROP TRIGGER IF EXISTS refuse_video_rows ON usage_records');
      await sql.query('DROP FUNCTION IF EXISTS refuse_video_rows()');
      await sql.end();
    }
    // the next submit is charged and kept as usual
    const next = await submit({ prompt: 'a lighthouse at dawn' });
    assert.equal(next.status, 200, JSON.stringify(next.body));
  });

  test('config video.enabled=false turns the routes off with a clear message', async () => {
    const off = await startTestGateway({ front, backend, raw: testConfig(mock.url, { enabled: false }) });
    try {
      const submitted = await request('POST', '/veo/v1/api/video/submit', { base: off.url, body: { prompt: 'x' } });
      assertVideoError(submitted, 410, 'VIDEO_API_DISABLED');
      assert.match(submitted.body.message, /legacy video task API is turned off/);
      assertVideoError(await request('GET', '/veo/v1/api/video/status/veo3:x', { base: off.url }), 410, 'VIDEO_API_DISABLED');
    } finally {
      await off.close();
    }
  });

  test('the vendor word comes from config', async () => {
    const custom = await startTestGateway({ front, backend, raw: testConfig(mock.url, { vendor: 'acme' }) });
    try {
      const answer = await request('POST', '/acme/v1/api/video/submit', { base: custom.url, body: { prompt: 'x', model: 'veo3' } });
      assertVideoError(answer, 401, 'UNAUTHORIZED');
      const old = await fetch(`${custom.url}/veo/v1/api/video/submit`, { method: 'POST', body: '{}' });
      assert.equal(old.status, 404);
    } finally {
      await custom.close();
    }
  });
});

/** The admin account topped up and a key of 1,000,000 quota made on a supervised gateway: its id and the headers of calls with it. */
async function videoCaller(supervisor: SupervisedGateway, dataDir: string, configPath: string): Promise<{ keyId: number; headers: Record<string, string> }> {
  await cliJson(['account', 'topup', '--account', 'admin', '--usd', '10'], dataDir, { TOLLGATE_CONFIG: configPath });
  const created = await call(supervisor.url, 'POST', '/api/token/', { token: supervisor.adminToken(), body: { name: 'video', remain_quota: 1_000_000 } });
  const revealed = await call(supervisor.url, 'POST', `/api/token/${created.json.data.id}/key`, { token: supervisor.adminToken() });
  return { keyId: created.json.data.id, headers: { authorization: `Bearer ${revealed.json.data.key}`, 'content-type': 'application/json' } };
}

describe('legacy video tasks under the supervisor', () => {
  test('the supervisor polls: a task submitted to a worker completes on its own', async () => {
    const dataDir = tempDir();
    const configPath = join(dataDir, 'config.json');
    writeFileSync(configPath, JSON.stringify({
      ...EMBEDDED_CONFIG, video: { poll_interval_ms: 50 },
      channels: [{ ...EMBEDDED_CONFIG.channels[0], simulator: { first_token_delay_ms: 0, tokens_per_second: 0 } }],
    }));
    const supervisor = await startSupervisor({ workers: 1, dataDir, configPath });
    try {
      const { headers } = await videoCaller(supervisor, dataDir, configPath);
      const submitted = await fetch(`${supervisor.url}/veo/v1/api/video/submit`, { method: 'POST', headers, body: JSON.stringify({ prompt: 'a sunrise' }) });
      assert.equal(submitted.status, 200);
      const { taskId } = ((await submitted.json()) as { data: { taskId: string } }).data;
      const final = await waitFor(async () => {
        const answer = await fetch(`${supervisor.url}/veo/v1/api/video/status/${taskId}`, { headers });
        const data = ((await answer.json()) as { data: { status: string; result?: { video_url: string } } }).data;
        return data.status === 'completed' ? data : undefined;
      }, 10_000, 50);
      assert.ok(final, 'the task completed without anyone calling the poller');
      assert.match(final.result!.video_url, /\.mp4$/);
    } finally {
      assert.equal(await supervisor.stop(), 0);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test('video models added by a reload: a task submitted after it completes, and one that fails is refunded', async () => {
    const dataDir = tempDir();
    const configPath = join(dataDir, 'config.json');
    const simulator = { ...EMBEDDED_CONFIG.channels[0], simulator: { first_token_delay_ms: 0, tokens_per_second: 0 } };
    const withVideo = { ...EMBEDDED_CONFIG, video: { poll_interval_ms: 50 }, channels: [simulator] };
    const videoModels = new Set(EMBEDDED_CONFIG.models.filter((model) => model.kind === 'video').map((model) => model.id));
    writeFileSync(configPath, JSON.stringify({
      ...withVideo, models: EMBEDDED_CONFIG.models.filter((model) => !videoModels.has(model.id)),
      channels: [{ ...simulator, models: simulator.models.filter((model) => !videoModels.has(model)) }],
    }));
    const supervisor = await startSupervisor({ workers: 1, dataDir, configPath });
    try {
      const { keyId, headers } = await videoCaller(supervisor, dataDir, configPath);
      writeFileSync(configPath, JSON.stringify(withVideo));
      const admin = (await cliJson(['admin', 'token'], dataDir, { TOLLGATE_CONFIG: configPath }) as { admin_token: string }).admin_token;
      const reloaded = await call(supervisor.url, 'POST', '/api/admin/reload', { token: admin });
      assert.equal(reloaded.status, 200, reloaded.text);
      const taskOf = async (prompt: string) => {
        const submitted = await fetch(`${supervisor.url}/veo/v1/api/video/submit`, { method: 'POST', headers, body: JSON.stringify({ prompt }) });
        assert.equal(submitted.status, 200, await submitted.clone().text());
        return ((await submitted.json()) as { data: { taskId: string } }).data.taskId;
      };
      const ended = (taskId: string) => waitFor(async () => {
        const answer = await fetch(`${supervisor.url}/veo/v1/api/video/status/${taskId}`, { headers });
        const data = ((await answer.json()) as { data: { status: string } }).data;
        return data.status === 'processing' ? undefined : data.status;
      }, 10_000, 50);
      assert.equal(await ended(await taskOf('a sunrise')), 'completed', 'the task submitted after the reload completes');
      assert.equal(await ended(await taskOf('this one will fail')), 'failed', 'a failing task ends');
      const key = await call(supervisor.url, 'GET', `/api/token/${keyId}`, { token: supervisor.adminToken() });
      assert.equal(key.json.data.used_quota, VEO3_QUOTA, 'charged for the task that completed, the failed one refunded');
    } finally {
      assert.equal(await supervisor.stop(), 0);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
