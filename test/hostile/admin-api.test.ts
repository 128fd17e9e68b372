// Issue 18, hostile input on the operator routes (/api/admin/*, /metrics), once per HTTP front:
// fuzzed bodies and queries, huge pages, deep JSON, oversized and slow bodies, clients that leave.
// Every answer is a 4xx envelope (never a 500, a hang or a crash), no balance moves, and the money
// invariants hold after each scenario.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, beforeEach, describe, test } from 'node:test';
import { issueAdminToken } from '../../src/auth/admin-token';
import { call, FRONTS, parseRawAnswer, rawExchange, startTestGateway, type Answer, type TestGateway } from '../helpers/gateway';
import { assertMoneyInvariants, moneySnapshot, type MoneySnapshot } from '../helpers/money';

/** a deterministic pseudo-random source, so a failure replays */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => { state = (state * 1664525 + 1013904223) >>> 0; return state / 2 ** 32; };
}

const WEIRD_VALUES: unknown[] = [null, true, false, 0, -1, 1.5, -0, 1e308, -1e308, 2 ** 53 + 1, '', ' ', '0', '-1', '1e3', 'NaN', '\u0000',
  '\ud800', '😀'.repeat(300), 'x'.repeat(70_000), [], [1], {}, { quota: 5 }, '<script>', 'admin', '../../etc/passwd', '%00'];

function expectEnvelope4xx(answer: Answer, label: string): void {
  assert.ok(answer.status >= 400 && answer.status < 500, `${label}: status ${answer.status} ${answer.text.slice(0, 300)}`);
  assert.equal(answer.json?.success, false, `${label}: ${answer.text.slice(0, 300)}`);
  assert.equal(typeof answer.json.message, 'string');
  assert.ok(answer.json.message.length > 0 && answer.json.message.length < 2000, `${label}: message length ${answer.json.message.length}`);
}

for (const front of FRONTS) describe(`admin API under hostile input (${front} front)`, () => {
  let gateway: TestGateway;
  let admin: string;
  let accountId: number;
  let before0: MoneySnapshot;
  const store = () => gateway.gateway.context.store;
  const api = (method: string, path: string, options: { body?: unknown; rawBody?: string | Buffer; headers?: Record<string, string> } = {}) =>
    call(gateway.url, method, `/api/admin${path}`, { ...options, token: admin });

  before(async () => {
    gateway = await startTestGateway({ front, raw: { limits: { api_body_bytes: 64 * 1024, body_timeout_ms: 800 } } });
    admin = await issueAdminToken(store(), 'hostile');
    const created = await api('POST', '/accounts', { body: { name: 'victim', balance: 1_000_000 } });
    accountId = created.json.data.id;
  });
  after(async () => { await gateway?.close(); });
  beforeEach(async () => { before0 = await moneySnapshot(store()); });

  const unchanged = async (label: string) => {
    assert.equal(await assertMoneyInvariants(store(), before0, label), 0);
    assert.equal((await store().accounts.get(accountId))!.balance, 1_000_000, `${label}: the balance did not move`);
  };

  test('fuzzed top-up and create bodies: every field of every type is a 4xx envelope, no balance moves', async () => {
    const random = seeded(18);
    for (const field of ['quota', 'usd', 'note', 'bogus']) {
      for (const value of WEIRD_VALUES) {
        if ((field === 'quota' && value === 5) || (field === 'usd' && value === 1.5)) continue;
        const body = field === 'note' ? { quota: 0, note: value } : { [field]: value };
        const answer = await api('POST', `/accounts/${accountId}/topup`, { body });
        expectEnvelope4xx(answer, `topup ${field}=${JSON.stringify(value)?.slice(0, 40)}`);
      }
    }
    for (let round = 0; round < 60; round += 1) {
      const bytes = randomBytes(1 + Math.floor(random() * 300));
      expectEnvelope4xx(await api('POST', `/accounts/${accountId}/topup`, { rawBody: bytes }), `random bytes round ${round}`);
      expectEnvelope4xx(await api('POST', '/accounts', { rawBody: bytes }), `random create bytes round ${round}`);
    }
    for (const value of WEIRD_VALUES) {
      // a well-formed name is simply created (an existing one is a 400): only the others are hostile here
      if (typeof value === 'string' && /^[\w.@-]{1,64}$/.test(value) && !/^\d+$/.test(value) && value !== 'admin') continue;
      const answer = await api('POST', '/accounts', { body: { name: value } });
      if (answer.status === 200) assert.fail(`create with name ${JSON.stringify(value)?.slice(0, 40)} was accepted`);
      expectEnvelope4xx(answer, `create name=${JSON.stringify(value)?.slice(0, 40)}`);
    }
    await unchanged('fuzzed bodies');
  });

  test('deep JSON: 100,000 levels as the body or as a field value is a 400, the worker keeps serving', async () => {
    const deep = '['.repeat(30_000) + ']'.repeat(30_000);
    expectEnvelope4xx(await api('POST', `/accounts/${accountId}/topup`, { rawBody: deep }), 'deep array body');
    expectEnvelope4xx(await api('POST', `/accounts/${accountId}/topup`, { rawBody: `{"quota":${'['.repeat(30_000)}1${']'.repeat(30_000)}}` }), 'deep field');
    expectEnvelope4xx(await api('POST', '/accounts', { rawBody: `{"name":"ok","note":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}` }), 'deep note');
    expectEnvelope4xx(await api('POST', '/channels/simulator/test', { rawBody: `{"model":${'['.repeat(20_000)}${']'.repeat(20_000)}}` }), 'deep model');
    assert.equal((await api('GET', '/accounts')).status, 200);
    await unchanged('deep JSON');
  });

  test('huge pages and hostile queries: bounded 400s naming the limit; far pages are empty, not slow', async () => {
    for (const query of ['p=1000001', 'p=-1', 'p=1e9', 'p=99999999999999999999999', 'page_size=101', 'page_size=1000000000', 'page_size=0',
      'page_size=abc', 'p=%00', 'keyword=' + 'k'.repeat(300)]) {
      expectEnvelope4xx(await api('GET', `/accounts?${query}`), `accounts ${query.slice(0, 40)}`);
      if (!query.startsWith('keyword')) expectEnvelope4xx(await api('GET', `/audit?${query}`), `audit ${query.slice(0, 40)}`);
    }
    const far = await api('GET', '/accounts?p=1000000&page_size=100');
    assert.equal(far.status, 200);
    assert.deepEqual(far.json.data.items, []);
    for (const query of ['by=' + 'x'.repeat(5000), 'from=1&to=999999999999', 'account_id=1e3', 'account_id=99999999999999999',
      'from=abc', 'to=-5', 'by=day&by=model&from=5&to=4']) {
      expectEnvelope4xx(await api('GET', `/usage?${query}`), `usage ${query.slice(0, 40)}`);
    }
    for (const path of ['/accounts/0', '/accounts/-1', '/accounts/1.5', '/accounts/' + '9'.repeat(40), '/accounts/%2e%2e', '/accounts/1/tokens/' + 'f'.repeat(200),
      '/channels/%ZZ/test', '/channels/' + 'c'.repeat(3000) + '/reset']) {
      const method = path.includes('/tokens/') ? 'DELETE' : path.startsWith('/channels') ? 'POST' : 'GET';
      expectEnvelope4xx(await api(method, path), `${method} ${path.slice(0, 40)}`);
    }
    await unchanged('hostile queries');
  });

  test('an oversized body is a 413 naming the limit; a slow body a 408; a client that leaves mid-body changes nothing', async () => {
    const big = await api('POST', `/accounts/${accountId}/topup`, { rawBody: `{"quota":1,"note":"${'n'.repeat(70 * 1024)}"}` });
    assert.equal(big.status, 413, big.text);
    assert.match(big.json.message, /65536-byte limit/);
    const head = `POST /api/admin/accounts/${accountId}/topup HTTP/1.1\r\nHost: x\r\nAuthorization: ${admin}\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n`;
    const slow = await rawExchange(gateway.port, [head, '{"quota":'], 4000);
    const parsed = parseRawAnswer(slow.text);
    assert.equal(parsed.status, 408, slow.text.slice(0, 300));
    assert.match(JSON.parse(parsed.body).message, /not received within 800 ms/);
    // a client that sends half a top-up and leaves
    const gone = await rawExchange(gateway.port, [head, '{"quota": 500'], 100);
    assert.equal(gone.closed, false);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    assert.equal((await api('GET', `/accounts/${accountId}`)).json.data.balance, 1_000_000);
    await unchanged('slow and leaving clients');
  });

  test('/metrics: wrong methods, query noise and a burst of concurrent scrapes; admin routes never answer without the token', async () => {
    const post = await call(gateway.url, 'POST', '/metrics', { rawBody: 'x' });
    assert.equal(post.status, 405);
    const noisy = await call(gateway.url, 'GET', '/metrics?format=json&' + 'a=b&'.repeat(200));
    assert.equal(noisy.status, 200);
    const burst = await Promise.all(Array.from({ length: 20 }, () => call(gateway.url, 'GET', '/metrics')));
    assert.ok(burst.every((answer) => answer.status === 200 && answer.text.includes('# TYPE tollgate_http_requests_total counter')));
    for (const token of [undefined, '', 'Bearer', `${admin}x`, admin.slice(0, -1), admin.toUpperCase(), `Basic ${Buffer.from(`a:${admin}`).toString('base64')}`]) {
      const answer = await call(gateway.url, 'POST', `/api/admin/accounts/${accountId}/topup`, { token, body: { quota: 1 } });
      assert.equal(answer.status, 401, `token ${String(token).slice(0, 12)}`);
    }
    await unchanged('metrics and auth');
  });
});
