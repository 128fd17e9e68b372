// Channel health (issue 18) against a real gateway and mock upstreams, once per HTTP front: a
// channel failing N times in a row cools down (skipped while a healthy one is left), comes back
// when it answers again, cools longer when it keeps failing; a refused key leaves the rotation,
// logged once by channel name (never the key); the admin channel list, test and reset.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startMockUpstream, type MockUpstream } from '../../scripts/mock-upstream';
import { call, capturingLogger, FRONTS, startTestGateway, type TestGateway } from '../helpers/gateway';
import { assertMoneyInvariants, moneySnapshot } from '../helpers/money';
import { chatConfig, createKey, sleep, type CreatedKey } from './chat-harness';
import { issueAdminToken } from '../../src/auth/admin-token';

const COOLDOWN_MS = 600;
const HELLO = [{ role: 'user', content: 'hello' }];

for (const front of FRONTS) {
  describe(`channel health (${front} front)`, () => {
    let primary: MockUpstream;
    let backup: MockUpstream;
    let locked: MockUpstream;
    let gateway: TestGateway;
    let key: CreatedKey;
    let admin: string;
    const logs = capturingLogger('warn');
    const chat = (model = 'mock-chat') => call(gateway.url, 'POST', '/v1/chat/completions', {
      headers: { authorization: `Bearer ${key.key}` }, body: { model, messages: HELLO, max_tokens: 8 },
    });
    const channels = async (): Promise<Record<string, any>> => {
      const answer = await call(gateway.url, 'GET', '/api/admin/channels', { token: admin });
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.json.success, true);
      return Object.fromEntries(answer.json.data.map((channel: any) => [channel.name, channel]));
    };

    before(async () => {
      primary = await startMockUpstream();
      backup = await startMockUpstream();
      locked = await startMockUpstream({ apiKeys: ['the-right-key'] });
      const raw = chatConfig(backup.url, { withoutMockChannel: true });
      raw.channels = [
        { name: 'primary', type: 'openai', base_url: primary.url, keys: ['k'], models: ['mock-chat'], priority: 10 },
        { name: 'backup', type: 'openai', base_url: backup.url, keys: ['k'], models: ['mock-chat'], priority: 0 },
        { name: 'locked', type: 'openai', base_url: locked.url, keys: ['wrong-key-0', 'the-right-key', 'wrong-key-2'], models: ['mock-vision'] },
        { name: 'dead', type: 'openai', base_url: locked.url, keys: ['dead-wrong-key'], models: ['mock-reasoner'], priority: 10 },
        { name: 'alive', type: 'openai', base_url: backup.url, keys: ['k'], models: ['mock-reasoner'], priority: 0 },
        ...(raw.channels as unknown[]),
      ];
      raw.retries = 2;
      raw.channel_health = { failures: 3, cooldown_ms: COOLDOWN_MS, max_cooldown_ms: 4 * COOLDOWN_MS };
      gateway = await startTestGateway({ front, raw, log: logs.log });
      await gateway.gateway.context.store.accounts.topUp(1, 50_000_000);
      key = await createKey(gateway.url, gateway.adminToken, { unlimited_quota: true });
      admin = await issueAdminToken(gateway.gateway.context.store, 'test');
    });
    after(async () => { await gateway?.close(); await primary?.close(); await backup?.close(); await locked?.close(); });

    test('3 failures in a row cool the channel: skipped while the backup serves, back once it answers, longer when it keeps failing', async () => {
      const before = await moneySnapshot(gateway.gateway.context.store);
      primary.script({ status: 500 }, 3);
      for (let index = 0; index < 3; index += 1) assert.equal((await chat()).status, 200);
      assert.equal(primary.requests.length, 3);
      let listed = await channels();
      assert.equal(listed.primary.state, 'cooling');
      assert.equal(listed.primary.consecutive_failures, 3);
      assert.equal(listed.primary.failure, 3);
      assert.ok(listed.primary.cooling_until > Date.now(), 'cooling_until is ahead');
      assert.equal(listed.backup.state, 'healthy');
      assert.equal(listed.backup.success, 3);
      assert.equal(typeof listed.backup.p50_ms, 'number');

      // while cooling: the backup answers at once, the primary sees nothing
      for (let index = 0; index < 3; index += 1) assert.equal((await chat()).status, 200);
      assert.equal(primary.requests.length, 3, 'a cooling channel is skipped while a healthy one is left');

      // the cool-down ends: the next call tries the primary again; it answers → healthy
      await sleep(listed.primary.cooling_until - Date.now() + 50);
      assert.equal((await chat()).status, 200);
      assert.equal(primary.requests.length, 4);
      listed = await channels();
      assert.equal(listed.primary.state, 'healthy');
      assert.equal(listed.primary.consecutive_failures, 0);

      // failing again: cooled for the base time; after it, one more failure cools it for twice as long
      primary.script({ status: 503 }, 3);
      for (let index = 0; index < 3; index += 1) await chat();
      listed = await channels();
      assert.equal(listed.primary.state, 'cooling');
      await sleep(listed.primary.cooling_until - Date.now() + 50);
      primary.script({ status: 503 }, 1);
      const startedAt = Date.now();
      assert.equal((await chat()).status, 200);
      const endedAt = Date.now();
      listed = await channels();
      assert.equal(listed.primary.state, 'cooling');
      assert.ok(listed.primary.cooling_until >= startedAt + 2 * COOLDOWN_MS && listed.primary.cooling_until <= endedAt + 2 * COOLDOWN_MS,
        `second cool-down is twice the first (${listed.primary.cooling_until - startedAt} ms)`);
      await gateway.gateway.context.ledger.flush();
      await assertMoneyInvariants(gateway.gateway.context.store, before, 'channel cool-down');
    });

    test('when every channel is cooling, calls still try them', async () => {
      primary.script({ status: 500 }, 50);
      backup.script({ status: 500 }, 50);
      for (let index = 0; index < 3; index += 1) await chat();
      const both = await channels();
      assert.equal(both.primary.state, 'cooling');
      assert.equal(both.backup.state, 'cooling');
      primary.reset();
      backup.reset();
      const answer = await chat();
      assert.equal(answer.status, 200, answer.text);
      assert.equal(primary.requests.length + backup.requests.length, 1, 'a cooling channel was still tried');
      for (const name of ['primary', 'backup']) {
        const reset = await call(gateway.url, 'POST', `/api/admin/channels/${name}/reset`, { token: admin });
        assert.equal(reset.json.data.channel, name);
      }
      const after = await channels();
      assert.equal(after.primary.state, 'healthy');
      assert.equal(after.backup.state, 'healthy');
    });

    test('a key refused with 401 leaves the rotation, logged once by channel name and index, never the key', async () => {
      for (let index = 0; index < 6; index += 1) {
        const answer = await chat('mock-vision');
        assert.equal(answer.status, 200, answer.text);
      }
      const used = locked.requests.map((request) => String(request.headers.authorization));
      // each wrong key was tried once at most, then only the right one
      assert.ok(used.filter((header) => header === 'Bearer wrong-key-0').length <= 1);
      assert.ok(used.filter((header) => header === 'Bearer wrong-key-2').length <= 1);
      assert.deepEqual(used.slice(-3), ['Bearer the-right-key', 'Bearer the-right-key', 'Bearer the-right-key']);
      const listed = await channels();
      assert.equal(listed.locked.state, 'healthy');
      assert.deepEqual(listed.locked.keys.map((entry: any) => entry.state), ['refused', 'ok', 'refused']);
      const refusals = logs.lines.filter((line) => String(line.msg).includes('was refused by the upstream') && line.channel === 'locked');
      assert.deepEqual(refusals.map((line) => line.key_index).sort(), [0, 2]);
      assert.ok(!logs.text().includes('wrong-key-0') && !logs.text().includes('the-right-key'), 'no key in the log');
    });

    test('a channel whose only key is refused is key_refused and skipped; a reset brings it back', async () => {
      const seen = locked.requests.length;
      for (let index = 0; index < 3; index += 1) assert.equal((await chat('mock-reasoner')).status, 200);
      assert.equal(locked.requests.length, seen + 1, 'the dead key was tried once');
      let listed = await channels();
      assert.equal(listed.dead.state, 'key_refused');
      assert.deepEqual(listed.dead.keys, [{ index: 0, state: 'refused', failures: 1 }]);
      const reset = await call(gateway.url, 'POST', '/api/admin/channels/dead/reset', { token: admin });
      assert.equal(reset.status, 200, reset.text);
      listed = await channels();
      assert.equal(listed.dead.state, 'healthy');
      const audit = await call(gateway.url, 'GET', '/api/admin/audit?action=channel.reset', { token: admin });
      assert.ok(audit.json.data.items.some((entry: any) => entry.details.channel === 'dead'));
    });

    test('POST /api/admin/channels/{name}/test: one small real call, its result and latency; unknown names and bad input refused', async () => {
      const seen = backup.requests.length;
      const good = await call(gateway.url, 'POST', '/api/admin/channels/backup/test', { token: admin });
      assert.equal(good.status, 200, good.text);
      assert.equal(good.json.data.ok, true);
      assert.equal(good.json.data.model, 'mock-chat');
      assert.equal(typeof good.json.data.latency_ms, 'number');
      assert.equal(backup.requests.length, seen + 1);
      assert.equal((backup.requests.at(-1)!.body as any).max_tokens, 1);
      const bad = await call(gateway.url, 'POST', '/api/admin/channels/dead/test', { token: admin, body: { model: 'mock-reasoner' } });
      assert.equal(bad.status, 200, bad.text);
      assert.equal(bad.json.data.ok, false);
      assert.equal(bad.json.data.status, 502);
      assert.match(bad.json.data.error, /rejected the gateway's credentials/);
      assert.ok(!bad.text.includes('dead-wrong-key'));
      assert.equal((await call(gateway.url, 'POST', '/api/admin/channels/nope/test', { token: admin })).status, 404);
      assert.equal((await call(gateway.url, 'POST', '/api/admin/channels/backup/test', { token: admin, body: { model: 'mock-vision' } })).status, 400);
      assert.equal((await call(gateway.url, 'POST', '/api/admin/channels/backup/test', { token: admin, body: { bogus: 1 } })).status, 400);
      assert.equal((await call(gateway.url, 'POST', '/api/admin/channels/backup/test')).status, 401);
    });
  });
}
