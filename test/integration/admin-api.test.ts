// The admin API (/api/admin/*, issue 18) against a real gateway, once per HTTP front: the admin
// token from the real CLI, auth (401 without it, account tokens refused), validation (4xx envelope
// naming the field), accounts, top-ups with their audit entries, access tokens, usage summaries.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { after as afterAll } from 'node:test';
import { issueAdminToken } from '../../src/auth/admin-token';
import { addAccount, call, cliJson, SETUPS, startTestGateway, stopClusterEngines, type TestGateway } from '../helpers/gateway';
import { refused, succeeded } from '../helpers/envelope';
import { assertMoneyInvariants, moneySnapshot } from '../helpers/money';

afterAll(stopClusterEngines);

for (const { front, backend, label, skip } of SETUPS) {
  describe(`admin API (${label})`, { skip }, () => {
    let gateway: TestGateway;
    let adminToken: string;
    const api = (method: string, path: string, options: { body?: unknown; rawBody?: string; token?: string | null } = {}) =>
      call(gateway.url, method, `/api/admin${path}`, { body: options.body, rawBody: options.rawBody, token: options.token === null ? undefined : options.token ?? adminToken });

    before(async () => {
      gateway = await startTestGateway({ front, backend });
      if (backend === 'lmdb') {
        // the real CLI, next to the running server
        const made = await cliJson(['admin', 'token'], gateway.dataDir) as { admin_token: string };
        assert.match(made.admin_token, /^tgadm-[A-Za-z0-9_-]{32}$/);
        adminToken = made.admin_token;
      } else adminToken = await issueAdminToken(gateway.gateway.context.store, 'test');
    });
    after(async () => { await gateway?.close(); });

    test('no Authorization header: 401 AUTH_REQUIRED on every admin route', async () => {
      for (const [method, path] of [['GET', '/accounts'], ['POST', '/accounts'], ['GET', '/accounts/1'], ['POST', '/accounts/1/topup'],
        ['GET', '/usage'], ['GET', '/audit'], ['GET', '/channels'], ['POST', '/reload'], ['DELETE', '/accounts/1/tokens/0123456789abcdef']]) {
        const answer = await api(method, path, { token: null });
        refused(answer, /Authorization header is required/, 401);
        assert.equal(answer.json.code, 'AUTH_REQUIRED', `${method} ${path}`);
      }
    });

    test('account access tokens, API keys and junk are not admin tokens: 401', async () => {
      const account = await addAccount(gateway, 'not-an-operator');
      for (const wrong of [account.token, gateway.adminToken, `Bearer ${gateway.adminToken}`, 'sk-' + 'a'.repeat(48), 'x'.repeat(5000), 'Bearer ']) {
        const answer = await api('GET', '/accounts', { token: wrong });
        refused(answer, /admin token is invalid|Authorization header is required/, 401);
      }
      // and the admin token is not an account token on the account's own API
      const own = await call(gateway.url, 'GET', '/api/token/', { token: adminToken });
      assert.equal(own.json.success, false);
      assert.equal(own.json.message, 'access token is invalid');
    });

    test('the admin token works bare and with a Bearer prefix', async () => {
      succeeded(await api('GET', '/accounts'));
      succeeded(await api('GET', '/accounts', { token: `Bearer ${adminToken}` }));
    });

    test('accounts: create (opening balance audited), list with paging and keyword, show', async () => {
      const created = succeeded(await api('POST', '/accounts', { body: { name: 'acme-corp', balance: 2_500_000, note: 'opening balance' } }));
      assert.equal(created.name, 'acme-corp');
      assert.equal(created.balance, 2_500_000);
      assert.equal(created.balance_usd, 5);
      assert.match(created.access_token, /^tga-/);
      // the new account's token works on its own API
      const keys = await call(gateway.url, 'GET', '/api/token/', { token: created.access_token });
      assert.equal(keys.json.success, true, keys.text);

      const listed = succeeded(await api('GET', '/accounts?p=0&page_size=2'));
      assert.deepEqual(Object.keys(listed).sort(), ['items', 'page', 'page_size', 'total']);
      assert.equal(listed.page_size, 2);
      assert.ok(listed.total >= 2);
      assert.equal(listed.items.length, 2);
      for (const item of listed.items) for (const field of ['id', 'name', 'balance']) assert.ok(field in item, field);
      assert.ok(listed.items[0].id > listed.items[1].id, 'newest first');
      const found = succeeded(await api('GET', '/accounts?keyword=ACME'));
      assert.deepEqual(found.items.map((item: any) => item.name), ['acme-corp']);

      const shown = succeeded(await api('GET', `/accounts/${created.id}`));
      assert.equal(shown.balance, 2_500_000);
      assert.equal(shown.keys, 0);
      assert.equal(shown.access_tokens, 1);
      refused(await api('GET', '/accounts/999999'), /no account with id 999999/, 404);
      refused(await api('GET', '/accounts/abc'), /account id must be a positive integer/, 400);
      refused(await api('POST', '/accounts', { body: { name: 'acme-corp' } }), /already exists/, 400);
    });

    test('create: bad input is a 400 envelope that names the field', async () => {
      const cases: [unknown, RegExp][] = [
        [{}, /name is required/],
        [{ name: 'has space' }, /name is required/],
        [{ name: 'x'.repeat(65) }, /name is required/],
        [{ name: 'ok-name', group: 'nope' }, /group "nope" is not in the config/],
        [{ name: 'ok-name', balance: -1 }, /balance must be an integer quota/],
        [{ name: 'ok-name', balance: 1.5 }, /balance must be an integer quota/],
        [{ name: 'ok-name', balance: 1e300 }, /balance must be an integer quota/],
        [{ name: 'ok-name', bogus: 1 }, /unknown field "bogus"/],
        [{ name: 'ok-name', note: 'a\u0000b' }, /note must not contain control characters/],
      ];
      for (const [body, pattern] of cases) refused(await api('POST', '/accounts', { body }), pattern, 400);
      refused(await api('POST', '/accounts', { rawBody: '{"name":' }), /not valid JSON/, 400);
      refused(await api('POST', '/accounts', { rawBody: '[1,2]' }), /must be a JSON object/, 400);
    });

    test('top-up: quota or usd with a note; every top-up is in the audit log with the balance after it', async () => {
      const account = succeeded(await api('POST', '/accounts', { body: { name: 'topped' } }));
      const first = succeeded(await api('POST', `/accounts/${account.id}/topup`, { body: { quota: 1_000_000, note: 'invoice 17' } }));
      assert.equal(first.balance, 1_000_000);
      assert.equal(typeof first.audit_id, 'number');
      const second = succeeded(await api('POST', `/accounts/${account.id}/topup`, { body: { usd: 0.5, note: 'promo' } }));
      assert.equal(second.balance, 1_250_000);
      for (const [body, pattern] of [
        [{}, /exactly one of quota/], [{ quota: 1, usd: 1 }, /exactly one of quota/], [{ quota: 0 }, /quota must be an integer quota from 1/],
        [{ quota: '5' }, /quota must be an integer/], [{ usd: -1 }, /usd must be a number above 0/], [{ usd: 1e-9 }, /below one quota unit/],
        [{ quota: 1, note: 'n'.repeat(501) }, /note is too long: at most 500/], [{ quota: 5e15 }, /would pass the most/],
      ] as [unknown, RegExp][]) refused(await api('POST', `/accounts/${account.id}/topup`, { body }), pattern, 400);
      refused(await api('POST', '/accounts/424242/topup', { body: { quota: 1 } }), /no account/, 404);

      const log = succeeded(await api('GET', `/audit?action=account.topup&account_id=${account.id}`));
      assert.equal(log.total, 2);
      assert.deepEqual(log.items.map((entry: any) => [entry.actor, entry.details.quota, entry.details.note, entry.details.balance_after]),
        [['admin-api', 250_000, 'promo', 1_250_000], ['admin-api', 1_000_000, 'invoice 17', 1_000_000]]);
      assert.equal(log.items[1].id, first.audit_id);
      const shown = succeeded(await api('GET', `/accounts/${account.id}`));
      assert.equal(shown.balance, 1_250_000);
    });

    test('access tokens: issue (read or write), list by handle, revoke one, rotate all', async () => {
      const account = succeeded(await api('POST', '/accounts', { body: { name: 'tokened' } }));
      const read = succeeded(await api('POST', `/accounts/${account.id}/tokens`, { body: { scope: 'read' } }));
      assert.equal(read.scope, 'read');
      assert.match(read.id, /^[0-9a-f]{16}$/);
      const readOnly = await call(gateway.url, 'POST', '/api/token/', { token: read.access_token, body: {} });
      assert.equal(readOnly.status, 403);
      const listed = succeeded(await api('GET', `/accounts/${account.id}/tokens`));
      assert.equal(listed.length, 2);
      assert.ok(listed.every((token: any) => !('access_token' in token) && /^[0-9a-f]{16}$/.test(token.id)));
      assert.ok(!JSON.stringify(listed).includes(read.access_token));

      succeeded(await api('DELETE', `/accounts/${account.id}/tokens/${read.id}`));
      const revokedUse = await call(gateway.url, 'GET', '/api/token/', { token: read.access_token });
      assert.equal(revokedUse.json.message, 'access token is invalid');
      refused(await api('DELETE', `/accounts/${account.id}/tokens/${read.id}`), /has no access token/, 404);
      refused(await api('DELETE', `/accounts/${account.id}/tokens/not-hex`), /16 hex digits/, 400);
      refused(await api('POST', `/accounts/${account.id}/tokens`, { body: { scope: 'admin' } }), /scope must be/, 400);

      const rotated = succeeded(await api('POST', `/accounts/${account.id}/tokens/rotate`));
      assert.equal(rotated.revoked, 1);
      const oldUse = await call(gateway.url, 'GET', '/api/token/', { token: account.access_token });
      assert.equal(oldUse.json.message, 'access token is invalid');
      const newUse = await call(gateway.url, 'GET', '/api/token/', { token: rotated.access_token });
      assert.equal(newUse.json.success, true);
      const actions = succeeded(await api('GET', `/audit?account_id=${account.id}`)).items.map((entry: any) => entry.action);
      assert.deepEqual(actions, ['token.rotate', 'token.revoke', 'token.issue', 'account.create']);
    });

    test('usage summaries per day, model and key, for one account or all; bad ranges refused', async () => {
      const account = succeeded(await api('POST', '/accounts', { body: { name: 'spender', balance: 50_000_000 } }));
      const key = await call(gateway.url, 'POST', '/api/token/', { token: account.access_token, body: { name: 'k1', unlimited_quota: true } });
      const keyValue = (await call(gateway.url, 'POST', `/api/token/${key.json.data.id}/key`, { token: account.access_token })).json.data.key;
      const before = await moneySnapshot(gateway.gateway.context.store);
      for (const model of ['sim-gpt-mini', 'sim-gpt-mini', 'sim-claude']) {
        const answer = await call(gateway.url, 'POST', '/v1/chat/completions', {
          headers: { authorization: `Bearer ${keyValue}` }, body: { model, messages: [{ role: 'user', content: 'hello there' }], max_tokens: 16 },
        });
        assert.equal(answer.status, 200, answer.text);
      }
      await gateway.gateway.context.ledger.flush();
      const byModel = succeeded(await api('GET', `/usage?by=model&account_id=${account.id}`));
      assert.equal(byModel.totals.requests, 3);
      assert.deepEqual(byModel.items.map((row: any) => row.model).sort(), ['sim-claude', 'sim-gpt-mini']);
      const used = (await gateway.gateway.context.store.accounts.get(account.id))!.used_quota;
      assert.equal(byModel.totals.quota, used);
      assert.ok(used > 0);
      const byDay = succeeded(await api('GET', `/usage?by=day&account_id=${account.id}`));
      assert.deepEqual(byDay.items.map((row: any) => row.day), [new Date().toISOString().slice(0, 10)]);
      const byKey = succeeded(await api('GET', '/usage?by=key'));
      const row = byKey.items.find((item: any) => item.key_id === key.json.data.id);
      assert.equal(row.key_name, 'k1');
      assert.equal(row.requests, 3);
      const past = succeeded(await api('GET', `/usage?account_id=${account.id}&from=0&to=100000`));
      assert.equal(past.totals.requests, 0);
      for (const [query, pattern] of [['by=week', /by must be one of/], ['from=10&to=5', /from must not be after to/],
        ['from=0&to=99999999999', /limited to 400 days/], ['account_id=-1', /account_id must be an integer/], ['to=1e9', /to must be an integer/]] as [string, RegExp][]) {
        refused(await api('GET', `/usage?${query}`), pattern, 400);
      }
      refused(await api('GET', '/usage?account_id=777777'), /no account/, 404);
      assert.equal(await assertMoneyInvariants(gateway.gateway.context.store, before, 'usage summary'), byModel.totals.quota);
    });

    test('paging bounds: a huge page or page_size is a 400 naming the bound, not a scan', async () => {
      refused(await api('GET', '/accounts?page_size=101'), /page_size must be an integer from 0 to 100/, 400);
      refused(await api('GET', '/accounts?page_size=0'), /page_size must be an integer from 1 to 100/, 400);
      refused(await api('GET', '/accounts?p=99999999999999999999'), /p must be an integer from 0 to 1000000/, 400);
      const empty = succeeded(await api('GET', '/accounts?p=1000000'));
      assert.deepEqual(empty.items, []);
      refused(await api('GET', '/audit?action=DROP%20TABLE'), /action must be an action name/, 400);
    });
  });
}
