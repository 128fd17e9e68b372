// Key management API (spec §2.1, §2.2, §3.1, §4.1, §5.1, §7.1; DESIGN §4) against a real gateway,
// once per HTTP front.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { EMBEDDED_CONFIG } from '../../src/config';
import { addAccount, call, SETUPS, startTestGateway, stopClusterEngines, type TestGateway } from '../helpers/gateway';
import { envelope, refused, succeeded } from '../helpers/envelope';

const MASKED = /^sk-[0-9A-Za-z]{4}\*{10}[0-9A-Za-z]{4}$/;
const FULL = /^sk-[0-9A-Za-z]{48}$/;
const DEFAULTS = {
  name: 'default', remain_quota: 0, unlimited_quota: false, expired_time: -1, group: 'default',
  billing_type: 4, models: '', remark: '', status: 1, used_quota: 0,
};

after(stopClusterEngines);

for (const { front, backend, label, skip } of SETUPS) {
  describe(`key management API (${label})`, { skip }, () => {
    let gateway: TestGateway;
    let token: string;
    const api = (method: string, path: string, options: { body?: unknown; token?: string | null; headers?: Record<string, string> } = {}) =>
      call(gateway.url, method, path, { body: options.body, headers: options.headers, token: options.token === null ? undefined : options.token ?? token });
    const createKey = async (body: Record<string, unknown> = {}, as?: string) => succeeded(await api('POST', '/api/token/', { body, token: as }));

    before(async () => {
      gateway = await startTestGateway({ front, backend });
      token = gateway.adminToken;
      assert.equal(gateway.gateway.front, front);
    });
    after(async () => { await gateway?.close(); });

    describe('authentication (spec §5.1, §7.1)', () => {
      test('a missing Authorization header is HTTP 401 with code AUTH_REQUIRED', async () => {
        for (const [method, path] of [['GET', '/api/token/'], ['POST', '/api/token/'], ['GET', '/api/token/1'], ['DELETE', '/api/token/1']]) {
          const answer = await api(method, path, { token: null });
          assert.equal(answer.status, 401, `${method} ${path}`);
          const body = envelope(answer);
          assert.equal(body.success, false);
          assert.equal(body.code, 'AUTH_REQUIRED');
          assert.notEqual(body.message, '');
        }
      });

      test('an unknown token is HTTP 200, success:false, "access token is invalid"', async () => {
        for (const wrong of ['tga-not-a-real-token', `Bearer tga-${'x'.repeat(32)}`, 'x'.repeat(2000)]) {
          const answer = await api('GET', '/api/token/', { token: wrong });
          refused(answer, /^access token is invalid$/);
        }
      });

      test('the token is accepted bare and with a Bearer prefix', async () => {
        succeeded(await api('GET', '/api/token/'));
        succeeded(await api('GET', '/api/token/', { token: `Bearer ${token}` }));
        succeeded(await api('GET', '/api/token/', { token: `bearer  ${token}` }));
      });

      test('a read-only token reads but gets 403 (no write permission) on create, update, status, delete and reveal', async () => {
        const key = await createKey({ name: 'guarded' });
        const { token: readToken } = await addAccount(gateway, 'admin', 'read');

        assert.equal(succeeded(await api('GET', `/api/token/${key.id}`, { token: readToken })).name, 'guarded');
        succeeded(await api('GET', '/api/token/?p=0', { token: readToken }));
        succeeded(await api('GET', '/api/token/search?keyword=guard', { token: readToken }));
        const writes: [string, string, unknown][] = [
          ['POST', '/api/token/', { name: 'nope' }],
          ['PUT', '/api/token/', { id: key.id, name: 'renamed' }],
          ['PUT', '/api/token/?status_only=true', { id: key.id, status: 2 }],
          ['DELETE', `/api/token/${key.id}`, undefined],
          ['POST', `/api/token/${key.id}/key`, undefined],
        ];
        for (const [method, path, body] of writes) {
          const answer = await api(method, path, { token: readToken, body });
          assert.equal(answer.status, 403, `${method} ${path}: ${answer.text}`);
          const envelopeBody = envelope(answer);
          assert.equal(envelopeBody.success, false);
          assert.match(envelopeBody.message, /no write permission/);
        }
        const unchanged = succeeded(await api('GET', `/api/token/${key.id}`));
        assert.equal(unchanged.name, 'guarded');
        assert.equal(unchanged.status, 1);
      });
    });

    describe('create (defaults and validation)', () => {
      test('an empty body creates a key with every default, masked, with an integer id', async () => {
        const data = await createKey({});
        assert.ok(Number.isSafeInteger(data.id) && data.id > 0);
        assert.match(data.key, MASKED);
        for (const [field, value] of Object.entries(DEFAULTS)) assert.deepEqual(data[field], value, field);
        assert.equal(data.model_limits, undefined);
        const second = succeeded(await call(gateway.url, 'POST', '/api/token/', { token }));   // no body at all
        for (const [field, value] of Object.entries(DEFAULTS)) assert.deepEqual(second[field], value, field);
        assert.ok(second.id > data.id, 'ids increase');
        assert.notEqual(second.key, data.key);
      });

      test('given fields are kept; unknown fields are ignored', async () => {
        const expiry = Math.floor(Date.now() / 1000) + 86_400;
        const data = await createKey({
          name: 'Prod Backend', remain_quota: 500000, unlimited_quota: true, expired_time: expiry, group: 'default',
          billing_type: 2, models: 'sim-gpt-mini, sim-image', remark: 'for the API', surprise: 'ignored', model_limits: 'x',
          status: 2, used_quota: 99,
        });
        assert.equal(data.name, 'Prod Backend');
        assert.equal(data.remain_quota, 500000);
        assert.equal(data.unlimited_quota, true);
        assert.equal(data.expired_time, expiry);
        assert.equal(data.billing_type, 2);
        assert.equal(data.models, 'sim-gpt-mini,sim-image');
        assert.equal(data.remark, 'for the API');
        assert.equal(data.status, 1);
        assert.equal(data.used_quota, 0);
        assert.equal(data.surprise, undefined);
        assert.equal(data.model_limits, undefined);
        assert.equal((await createKey({ expired_time: 0 })).expired_time, 0, 'expired_time 0 (never) is accepted');
      });

      test('every invalid field is refused with a message naming it', async () => {
        const before = succeeded(await api('GET', '/api/token/')).total;
        const cases: [Record<string, unknown>, RegExp][] = [
          [{ name: 'n'.repeat(51) }, /name is too long.*50/],
          [{ name: 'n'.repeat(10 * 1024) }, /name is too long.*50/],
          [{ name: 'bad\u0000name' }, /name must not contain control characters/],
          [{ name: 'line\nbreak' }, /name must not contain control characters/],
          [{ name: 42 }, /name must be a string/],
          [{ remain_quota: '10' }, /remain_quota must be an integer/],
          [{ remain_quota: 1.5 }, /remain_quota must be an integer/],
          [{ remain_quota: null }, /remain_quota must be an integer/],
          [{ remain_quota: -1 }, /remain_quota must not be negative/],
          [{ remain_quota: 5e14 + 1 }, /remain_quota must be at most/],
          [{ unlimited_quota: 'yes' }, /unlimited_quota must be true or false/],
          [{ expired_time: Math.floor(Date.now() / 1000) - 60 }, /expired_time is in the past/],
          [{ expired_time: -5 }, /expired_time/],
          [{ expired_time: 'tomorrow' }, /expired_time must be an integer/],
          [{ billing_type: 3 }, /billing_type must be 1.*2.*4/],
          [{ group: 'vip' }, /group "vip" does not exist/],
          [{ remark: 'r'.repeat(300) }, /remark is too long/],
        ];
        for (const [body, pattern] of cases) refused(await api('POST', '/api/token/', { body }), pattern);
        assert.equal((await createKey({ remain_quota: 5e14 })).remain_quota, 5e14, 'the maximum itself is allowed');
        assert.equal((await createKey({ name: 'n'.repeat(50) })).name, 'n'.repeat(50), 'a 50-character name is allowed');
        assert.equal(succeeded(await api('GET', '/api/token/')).total, before + 2, 'no refused create stored a key');
      });
    });

    describe('list, search and get', () => {
      let reader: { id: number; token: string };
      const names: string[] = [];

      before(async () => {
        reader = await addAccount(gateway, `pager-${front}`);
        for (let index = 0; index < 25; index += 1) {
          const name = index % 5 === 0 ? `Alpha-${index}` : `beta-${index}`;
          names.push(name);
          await createKey({ name }, reader.token);
        }
      });

      test('pages of 10, newest first, masked keys, {items,total,page,page_size}', async () => {
        const seen: number[] = [];
        for (const [page, expected] of [[0, 10], [1, 10], [2, 5], [3, 0]]) {
          const data = succeeded(await api('GET', `/api/token/?p=${page}`, { token: reader.token }));
          assert.deepEqual(Object.keys(data).sort(), ['items', 'page', 'page_size', 'total']);
          assert.equal(data.total, 25);
          assert.equal(data.page, page);
          assert.equal(data.page_size, 10);
          assert.equal(data.items.length, expected, `page ${page}`);
          for (const item of data.items) {
            assert.match(item.key, MASKED);
            assert.equal(typeof item.used_quota, 'number');
            seen.push(item.id);
          }
        }
        assert.equal(new Set(seen).size, 25);
        assert.deepEqual(seen, [...seen].sort((left, right) => right - left), 'newest first');
        const first = succeeded(await api('GET', '/api/token/', { token: reader.token }));
        assert.equal(first.page, 0, 'p defaults to 0');
        assert.equal(first.items[0].name, names[24]);
      });

      test('a huge page number is an empty page, not an error; a bad one is a clear error', async () => {
        for (const p of ['1000000', '99999999999999999999']) {
          const data = succeeded(await api('GET', `/api/token/?p=${p}`, { token: reader.token }));
          assert.deepEqual(data.items, []);
          assert.equal(data.total, 25);
        }
        refused(await api('GET', '/api/token/?p=-1', { token: reader.token }), /p must be/);
        refused(await api('GET', '/api/token/?p=abc', { token: reader.token }), /p must be/);
      });

      test('page_size is honoured up to 100', async () => {
        const data = succeeded(await api('GET', '/api/token/?p=0&page_size=20', { token: reader.token }));
        assert.equal(data.items.length, 20);
        assert.equal(data.page_size, 20);
        const capped = succeeded(await api('GET', '/api/token/?p=0&page_size=5000', { token: reader.token }));
        assert.equal(capped.page_size, 100);
        assert.equal(capped.items.length, 25);
        refused(await api('GET', '/api/token/?page_size=0', { token: reader.token }), /page_size must be/);
      });

      test('search is a case-insensitive substring match on the name, with the same paging', async () => {
        const alpha = succeeded(await api('GET', '/api/token/search?keyword=ALPHA&p=0', { token: reader.token }));
        assert.equal(alpha.total, 5);
        assert.deepEqual(alpha.items.map((item: any) => item.name), ['Alpha-20', 'Alpha-15', 'Alpha-10', 'Alpha-5', 'Alpha-0']);
        for (const item of alpha.items) assert.match(item.key, MASKED);
        const beta = await Promise.all([0, 1, 2].map(async (p) =>
          succeeded(await api('GET', `/api/token/search?keyword=eTa-&p=${p}`, { token: reader.token }))));
        assert.deepEqual(beta.map((page) => page.items.length), [10, 10, 0]);
        assert.equal(beta[0].total, 20);
        assert.equal(beta[1].page, 1);
        // lower-cased names containing "a-1": alpha-10, alpha-15, beta-1, beta-11…14, beta-16…19
        const one = succeeded(await api('GET', '/api/token/search?keyword=a-1', { token: reader.token }));
        assert.equal(one.total, 11);
        assert.equal(one.items.length, 10);
        const rest = succeeded(await api('GET', '/api/token/search?keyword=a-1&p=1', { token: reader.token }));
        assert.deepEqual(rest.items.map((item: any) => item.name), ['beta-1']);
        assert.deepEqual(succeeded(await api('GET', '/api/token/search?keyword=zzz', { token: reader.token })).items, []);
      });

      test('get by id returns the masked key object', async () => {
        const listed = succeeded(await api('GET', '/api/token/?p=0', { token: reader.token })).items[3];
        const data = succeeded(await api('GET', `/api/token/${listed.id}`, { token: reader.token }));
        assert.deepEqual(data, listed);
        assert.match(data.key, MASKED);
      });

      test('non-numeric, negative and zero ids in paths are clear errors', async () => {
        for (const id of ['abc', '-1', '0', '1.5', '1e3', '%20']) {
          refused(await api('GET', `/api/token/${id}`), /id must be a positive integer/);
          refused(await api('DELETE', `/api/token/${id}`), /id must be a positive integer/);
          refused(await api('POST', `/api/token/${id}/key`), /id must be a positive integer/);
        }
        refused(await api('GET', '/api/token/999999999'), /^record not found$/);
      });
    });

    describe('update, status, delete', () => {
      test('PUT replaces every editable field; omitted fields go back to defaults; key, used_quota, status, model_limits are ignored', async () => {
        const original = await createKey({ name: 'full', remain_quota: 1000, unlimited_quota: true, billing_type: 1, models: 'sim-gpt-mini', remark: 'r' });
        succeeded(await api('PUT', '/api/token/?status_only=true', { body: { id: original.id, status: 2 } }));
        const replaced = succeeded(await api('PUT', '/api/token/', { body: { id: original.id, name: 'renamed' } }));
        assert.equal(replaced.id, original.id);
        assert.equal(replaced.name, 'renamed');
        for (const field of ['remain_quota', 'unlimited_quota', 'expired_time', 'group', 'billing_type', 'models', 'remark'] as const) {
          assert.deepEqual(replaced[field], DEFAULTS[field], field);
        }
        assert.equal(replaced.status, 2, 'status is not touched by a full update');
        assert.equal(replaced.key, original.key);
        const ignored = succeeded(await api('PUT', '/api/token/', {
          body: { id: original.id, name: 'again', key: 'sk-forged', used_quota: 77, status: 1, model_limits: 'sim-image', created_time: 1 },
        }));
        assert.equal(ignored.key, original.key);
        assert.equal(ignored.used_quota, 0);
        assert.equal(ignored.status, 2);
        assert.equal(ignored.models, '');
        assert.equal(ignored.created_time, original.created_time);
        assert.deepEqual(succeeded(await api('GET', `/api/token/${original.id}`)), ignored);
      });

      test('PUT validates like create and needs a valid id of this account', async () => {
        const key = await createKey({ name: 'validated' });
        refused(await api('PUT', '/api/token/', { body: { id: key.id, name: 'x'.repeat(51) } }), /name is too long/);
        refused(await api('PUT', '/api/token/', { body: { id: key.id, remain_quota: 1.5 } }), /remain_quota must be an integer/);
        refused(await api('PUT', '/api/token/', { body: { name: 'no id' } }), /id must be a positive integer/);
        refused(await api('PUT', '/api/token/', { body: { id: '7x' } }), /id must be a positive integer/);
        refused(await api('PUT', '/api/token/', { body: { id: '1', name: 'string id' } }), /id must be a positive integer \(got string\)/);
        refused(await api('PUT', '/api/token/', { body: { id: 999999999 } }), /^record not found$/);
        assert.equal(succeeded(await api('GET', `/api/token/${key.id}`)).name, 'validated');
      });

      test('status_only sets 2 then 1 and nothing else; other values are refused', async () => {
        const key = await createKey({ name: 'toggle', remain_quota: 42 });
        const disabled = succeeded(await api('PUT', '/api/token/?status_only=true', { body: { id: key.id, status: 2, name: 'ignored' } }));
        assert.equal(disabled.status, 2);
        assert.equal(disabled.name, 'toggle');
        assert.equal(disabled.remain_quota, 42);
        assert.match(disabled.key, MASKED);
        assert.equal(succeeded(await api('GET', `/api/token/${key.id}`)).status, 2);
        assert.equal(succeeded(await api('PUT', '/api/token/?status_only=true', { body: { id: key.id, status: 1 } })).status, 1);
        for (const status of [3, 0, '1', null]) {
          refused(await api('PUT', '/api/token/?status_only=true', { body: { id: key.id, status } }), /status must be 1.*or 2/);
        }
        refused(await api('PUT', '/api/token/?status_only=true', { body: { id: 999999999, status: 2 } }), /^record not found$/);
        assert.equal(succeeded(await api('GET', `/api/token/${key.id}`)).status, 1);
      });

      test('status_only as 1, TRUE, yes or a bare flag changes only the status; an unclear value is refused, never a full replace', async () => {
        const key = await createKey({ name: 'flags', remain_quota: 777, models: 'sim-gpt-mini', billing_type: 1 });
        const kept = { name: 'flags', remain_quota: 777, models: 'sim-gpt-mini', billing_type: 1 };
        for (const [query, status] of [['status_only=1', 2], ['status_only=TRUE', 1], ['status_only=yes', 2], ['status_only', 1]] as const) {
          const answer = succeeded(await api('PUT', `/api/token/?${query}`, { body: { id: key.id, status } }));
          assert.deepEqual({ status: answer.status, name: answer.name, remain_quota: answer.remain_quota, models: answer.models, billing_type: answer.billing_type },
            { status, ...kept }, query);
        }
        for (const query of ['status_only=maybe', 'status_only=2']) {
          refused(await api('PUT', `/api/token/?${query}`, { body: { id: key.id, status: 2 } }), /status_only must be true or false/);
        }
        // false is the full replace: omitted fields take their defaults
        const replaced = succeeded(await api('PUT', '/api/token/?status_only=false', { body: { id: key.id, name: 'flags' } }));
        assert.deepEqual([replaced.remain_quota, replaced.models, replaced.billing_type, replaced.status], [0, '', 4, 1]);
      });

      test('a name is measured in characters: 50 emoji fit, 51 do not', async () => {
        const fits = await createKey({ name: '😀'.repeat(50) });
        assert.equal(fits.name, '😀'.repeat(50));
        refused(await api('POST', '/api/token/', { body: { name: '😀'.repeat(51) } }), /name is too long: at most 50 characters \(got 51\)/);
      });

      test('GET → edit → PUT works on a key whose expiry has passed; another past expiry is refused', async () => {
        // 3 s ahead: on a loaded machine the create itself can take over a second
        const key = await createKey({ name: 'lapsing', expired_time: Math.floor(Date.now() / 1000) + 3 });
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, key.expired_time * 1000 - Date.now()) + 1100));
        const { key: _masked, ...read } = succeeded(await api('GET', `/api/token/${key.id}`));
        const updated = succeeded(await api('PUT', '/api/token/', { body: { ...read, remark: 'note' } }));
        assert.deepEqual([updated.remark, updated.expired_time], ['note', key.expired_time]);
        refused(await api('PUT', '/api/token/', { body: { ...read, expired_time: key.expired_time - 1 } }), /expired_time is in the past/);
      });

      test('delete removes the key for good: get, update, reveal and a second delete say record not found', async () => {
        const key = await createKey({ name: 'doomed' });
        succeeded(await api('DELETE', `/api/token/${key.id}`));
        refused(await api('GET', `/api/token/${key.id}`), /^record not found$/);
        refused(await api('DELETE', `/api/token/${key.id}`), /^record not found$/);
        refused(await api('PUT', '/api/token/', { body: { id: key.id, name: 'x' } }), /^record not found$/);
        refused(await api('PUT', '/api/token/?status_only=true', { body: { id: key.id, status: 1 } }), /^record not found$/);
        refused(await api('POST', `/api/token/${key.id}/key`), /^record not found$/);
        const names = succeeded(await api('GET', '/api/token/search?keyword=doomed')).items;
        assert.deepEqual(names, []);
      });

      test("another account's key is record not found on get, update, status, delete and reveal", async () => {
        const other = await addAccount(gateway, `other-${front}`);
        const theirs = await createKey({ name: 'theirs' }, other.token);
        const checks: [string, string, unknown][] = [
          ['GET', `/api/token/${theirs.id}`, undefined],
          ['PUT', '/api/token/', { id: theirs.id, name: 'stolen' }],
          ['PUT', '/api/token/?status_only=true', { id: theirs.id, status: 2 }],
          ['DELETE', `/api/token/${theirs.id}`, undefined],
          ['POST', `/api/token/${theirs.id}/key`, undefined],
        ];
        for (const [method, path, body] of checks) refused(await api(method, path, { body }), /^record not found$/);
        const intact = succeeded(await api('GET', `/api/token/${theirs.id}`, { token: other.token }));
        assert.equal(intact.name, 'theirs');
        assert.equal(intact.status, 1);
        const adminList = succeeded(await api('GET', '/api/token/search?keyword=theirs&page_size=100')).items;
        assert.deepEqual(adminList, []);
      });
    });

    describe('reveal', () => {
      test('returns the full sk- value matching the masked form, with Cache-Control: no-store', async () => {
        const key = await createKey({ name: 'secret' });
        const answer = await api('POST', `/api/token/${key.id}/key`);
        const data = succeeded(answer);
        assert.equal(answer.headers['cache-control'], 'no-store');
        assert.match(data.key, FULL);
        assert.equal(`sk-${data.key.slice(3, 7)}${'*'.repeat(10)}${data.key.slice(-4)}`, key.key);
        const again = succeeded(await api('POST', `/api/token/${key.id}/key`));
        assert.equal(again.key, data.key, 'the stored value is stable');
      });
    });
  });

  describe(`reveal rate limit and key cap (${label})`, { skip }, () => {
    let gateway: TestGateway;
    before(async () => {
      gateway = await startTestGateway({ front, backend, raw: { ...EMBEDDED_CONFIG, limits: { reveal: { count: 3, window_seconds: 600 }, max_keys_per_account: 5 } } });
    });
    after(async () => { await gateway?.close(); });

    test('the 4th reveal in the window is 429 with the envelope, Retry-After and Cache-Control: no-store', async () => {
      const created = succeeded(await call(gateway.url, 'POST', '/api/token/', { token: gateway.adminToken, body: { name: 'r' } }));
      for (let index = 0; index < 3; index += 1) {
        succeeded(await call(gateway.url, 'POST', `/api/token/${created.id}/key`, { token: gateway.adminToken }));
      }
      const limited = await call(gateway.url, 'POST', `/api/token/${created.id}/key`, { token: gateway.adminToken });
      assert.equal(limited.status, 429, limited.text);
      const body = envelope(limited);
      assert.equal(body.success, false);
      assert.match(body.message, /reveal/);
      assert.doesNotMatch(limited.text, /sk-[0-9A-Za-z]{48}/);
      const retryAfter = Number(limited.headers['retry-after']);
      assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 600, `Retry-After ${limited.headers['retry-after']}`);
      assert.equal(limited.headers['cache-control'], 'no-store');
    });

    test('the limit is per account: another account from the same address still reveals', async () => {
      // The admin account used up its own window in the previous test; no client_ip_header is set.
      const other = await addAccount(gateway, 'second');
      const created = succeeded(await call(gateway.url, 'POST', '/api/token/', { token: other.token, body: {} }));
      const revealed = succeeded(await call(gateway.url, 'POST', `/api/token/${created.id}/key`, { token: other.token }));
      assert.match(revealed.key, FULL);
      const own = succeeded(await call(gateway.url, 'POST', '/api/token/', { token: gateway.adminToken, body: { name: 'r2' } }));
      const stillLimited = await call(gateway.url, 'POST', `/api/token/${own.id}/key`, { token: gateway.adminToken });
      assert.equal(stillLimited.status, 429, 'the admin account stays limited');
    });

    test('an account holding the maximum number of keys cannot create another', async () => {
      const owner = await addAccount(gateway, 'capped');
      for (let index = 0; index < 5; index += 1) succeeded(await call(gateway.url, 'POST', '/api/token/', { token: owner.token, body: {} }));
      refused(await call(gateway.url, 'POST', '/api/token/', { token: owner.token, body: {} }), /maximum of 5 keys/);
      const data = succeeded(await call(gateway.url, 'GET', '/api/token/', { token: owner.token }));
      assert.equal(data.total, 5);
      const first = data.items[4];
      succeeded(await call(gateway.url, 'DELETE', `/api/token/${first.id}`, { token: owner.token }));
      succeeded(await call(gateway.url, 'POST', '/api/token/', { token: owner.token, body: {} }));
    });
  });
}
