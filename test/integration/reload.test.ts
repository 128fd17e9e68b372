// Live reload (issue 18) through the real supervisor with 2 workers, once per HTTP front: a reload
// under load fails no call, bills the old price before the switch and the new one from it; a
// stream open across the switch finishes on its old price; a config that does not validate is
// refused naming the bad entry; SIGHUP and `tollgate reload` reload too.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { EMBEDDED_CONFIG } from '../../src/config';
import { LmdbStore as Store } from '../../src/store/lmdb';
import { call, cliJson, FRONTS, startSupervisor, waitFor, type SupervisedGateway } from '../helpers/gateway';
import { assertMoneyInvariants, moneySnapshot, type MoneySnapshot } from '../helpers/money';
import { createKey, expectedUsageQuota, sleep, writeConfigFile, type CreatedKey } from './chat-harness';

const OLD = { input: 0.15, output: 0.6 };
const NEW = { input: 1.5, output: 6 };
const SLOW_OLD = { input: 3, output: 15 };
const SLOW_NEW = { input: 30, output: 150 };
/** bounds of the load: per loop and in all */
const LOOPS = 4;
const MAX_CALLS_PER_LOOP = 120;
const LOAD_DEADLINE_MS = 120_000;

function configWith(chat: { input: number; output: number }, slow: { input: number; output: number }, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    ...EMBEDDED_CONFIG,
    models: [
      { id: 'sim-gpt-mini', owned_by: 'tollgate-simulator', price: chat },
      { id: 'sim-claude', owned_by: 'tollgate-simulator', price: slow },
    ],
    channels: [
      { name: 'fast', type: 'simulator', models: ['sim-gpt-mini'], simulator: { first_token_delay_ms: 2, tokens_per_second: 0 } },
      { name: 'slow', type: 'simulator', models: ['sim-claude'], simulator: { first_token_delay_ms: 10, tokens_per_second: 10 } },
    ],
    ...extra,
  };
}

interface CallResult { startedAt: number; endedAt: number; status: number; promptTokens: number; completionTokens: number; text: string }

for (const front of FRONTS) {
  describe(`live reload under load (${front} front, 2 workers)`, () => {
    let supervisor: SupervisedGateway;
    let configPath: string;
    let admin: string;
    let key: CreatedKey;
    let store: Store;
    let before0: MoneySnapshot;
    let sequence = 0;

    const chat = async (model: string, content: string, stream = false, maxTokens = 40): Promise<CallResult> => {
      const startedAt = Date.now();
      const answer = await call(supervisor.url, 'POST', '/v1/chat/completions', {
        headers: { authorization: `Bearer ${key.key}` },
        body: { model, messages: [{ role: 'user', content }], max_tokens: maxTokens, stream, ...(stream ? { stream_options: { include_usage: true } } : {}) },
      });
      const endedAt = Date.now();
      let usage = answer.json?.usage;
      if (stream) {
        const last = answer.text.split('\n').filter((line) => line.startsWith('data: {')).map((line) => JSON.parse(line.slice(6))).filter((event) => event.usage).at(-1);
        usage = last?.usage;
      }
      return { startedAt, endedAt, status: answer.status, promptTokens: usage?.prompt_tokens ?? -1, completionTokens: usage?.completion_tokens ?? -1, text: answer.text };
    };

    before(async () => {
      configPath = writeConfigFile(configWith(OLD, SLOW_OLD));
      supervisor = await startSupervisor({ workers: 2, configPath, env: { TOLLGATE_FRONT: front } });
      admin = (await cliJson(['admin', 'token'], supervisor.dataDir) as { admin_token: string }).admin_token;
      const topped = await call(supervisor.url, 'POST', '/api/admin/accounts/1/topup', { token: admin, body: { usd: 1000, note: 'reload test' } });
      assert.equal(topped.status, 200, topped.text);
      key = await createKey(supervisor.url, supervisor.adminToken(), { unlimited_quota: true });
      store = Store.open(supervisor.dataDir);
      before0 = await moneySnapshot(store);
    });
    after(async () => { await supervisor?.stop(); await store?.close(); });

    test('reload under load: no failed call, the old price before the switch, the new price from it; a stream open across it keeps its price', async () => {
      const results: CallResult[] = [];
      let reloadSentAt = 0;
      let reloadAnsweredAt = 0;
      let callsAfterReload = 0;
      const deadline = Date.now() + LOAD_DEADLINE_MS;
      let stream: Promise<CallResult> | undefined;
      const loop = async () => {
        for (let index = 0; index < MAX_CALLS_PER_LOOP && Date.now() < deadline; index += 1) {
          if (reloadAnsweredAt > 0 && callsAfterReload >= LOOPS * 3) return;
          sequence += 1;
          // a prompt of its own length per call: the record is found again by its prompt tokens. Plain
          // words, whose byte estimate leans high: a prompt denser than its estimate ('wwww…') may be
          // charged at most its reservation when the settlement cannot extend it (docs/money.md)
          const result = await chat('sim-gpt-mini', 'hello '.repeat(2 * sequence));
          results.push(result);
          if (reloadAnsweredAt > 0 && result.startedAt > reloadAnsweredAt) callsAfterReload += 1;
        }
      };
      const switcher = async () => {
        assert.ok(await waitFor(async () => results.length >= 8, LOAD_DEADLINE_MS / 2, 20), 'calls before the switch');
        // a stream open across the switch (60 tokens at 10 per second)
        stream = chat('sim-claude', 'a slow stream', true, 60);
        await sleep(300);
        writeFileSync(configPath, JSON.stringify(configWith(NEW, SLOW_NEW)));
        reloadSentAt = Date.now();
        const answer = await call(supervisor.url, 'POST', '/api/admin/reload', { token: admin });
        reloadAnsweredAt = Date.now();
        assert.equal(answer.status, 200, answer.text);
        assert.equal(answer.json.data.generation, 1);
        assert.deepEqual(answer.json.data.restart_required, []);
      };
      await Promise.all([...Array.from({ length: LOOPS }, loop), switcher()]);
      const streamed = await stream!;

      assert.ok(results.every((result) => result.status === 200), `every call answered 200: ${results.filter((result) => result.status !== 200).map((result) => result.text).join(' | ')}`);
      assert.equal(streamed.status, 200);
      assert.ok(streamed.endedAt > reloadAnsweredAt, 'the stream was still open at the switch');
      assert.ok(streamed.startedAt < reloadSentAt);

      const expected = 1 + results.length;
      // by id: a record committed while the pages are read shifts them, so one page can repeat an
      // item of the one before and the list can miss the newcomer; the next read finds it
      const records = await waitFor(async () => {
        const items = new Map<number, unknown>();
        for (let page = 0; page < 20; page += 1) {
          const listed = await call(supervisor.url, 'GET', `/api/log/?key_id=${key.id}&p=${page}&page_size=100`, { token: supervisor.adminToken() });
          for (const item of listed.json.data.items) items.set(item.id, item);
          if (listed.json.data.items.length < 100) break;
        }
        return items.size === expected ? [...items.values()] : undefined;
      }, 30_000, 100);
      assert.ok(records, `all ${expected} calls have their usage record`);
      const byPrompt = new Map(records.filter((record: any) => record.model === 'sim-gpt-mini').map((record: any) => [record.prompt_tokens, record]));
      assert.equal(byPrompt.size, results.length, 'prompt token counts tell the calls apart');
      let old = 0;
      let fresh = 0;
      for (const result of results) {
        const record: any = byPrompt.get(result.promptTokens);
        assert.ok(record, `a record for the call with ${result.promptTokens} prompt tokens`);
        const oldQuota = expectedUsageQuota(OLD, record.prompt_tokens, record.completion_tokens);
        const newQuota = expectedUsageQuota(NEW, record.prompt_tokens, record.completion_tokens);
        assert.ok(record.quota === oldQuota || record.quota === newQuota, `billed ${record.quota}: neither ${oldQuota} nor ${newQuota}: ${JSON.stringify(record)} ${JSON.stringify({ ...result, text: undefined })} reload ${reloadSentAt}-${reloadAnsweredAt}`);
        if (result.endedAt < reloadSentAt) { assert.equal(record.quota, oldQuota, 'a call done before the reload is billed the old price'); old += 1; }
        if (result.startedAt > reloadAnsweredAt) { assert.equal(record.quota, newQuota, 'a call started after the reload is billed the new price'); fresh += 1; }
      }
      assert.ok(old >= 4 && fresh >= 4, `calls on both sides of the switch (${old} before, ${fresh} after)`);
      const streamRecord: any = records.find((record: any) => record.model === 'sim-claude');
      assert.equal(streamRecord.quota, expectedUsageQuota(SLOW_OLD, streamRecord.prompt_tokens, streamRecord.completion_tokens), 'the open stream finished on the old price');
      await assertMoneyInvariants(store, before0, 'reload under load');
    });

    test('a config that does not validate is refused naming the bad entry; the running config stays', async () => {
      const broken = configWith(NEW, SLOW_NEW);
      (broken.models as Record<string, unknown>[])[0].pricee = { input: 1 };
      writeFileSync(configPath, JSON.stringify(broken));
      const answer = await call(supervisor.url, 'POST', '/api/admin/reload', { token: admin });
      assert.equal(answer.status, 422, answer.text);
      assert.equal(answer.json.success, false);
      assert.match(answer.json.message, /^config not reloaded: model "sim-gpt-mini": unknown field "pricee"/);
      writeFileSync(configPath, '{"models": [');
      const garbled = await call(supervisor.url, 'POST', '/api/admin/reload', { token: admin });
      assert.equal(garbled.status, 422);
      assert.match(garbled.json.message, /is not valid JSON/);
      // still the new price of generation 1
      sequence += 1;
      const result = await chat('sim-gpt-mini', 'hello '.repeat(2 * sequence));
      assert.equal(result.status, 200);
      const refusals = await call(supervisor.url, 'GET', '/api/admin/audit?action=reload.refused', { token: admin });
      assert.equal(refusals.json.data.total, 2);
      assert.match(refusals.json.data.items[1].details.error, /unknown field "pricee"/);
      assert.equal((await call(supervisor.url, 'POST', '/api/admin/reload')).status, 401);
    });

    test('SIGHUP and `tollgate reload` re-read the file; a new model is served at once by every worker', async () => {
      writeFileSync(configPath, JSON.stringify(configWith(NEW, SLOW_NEW, {
        models: [...(configWith(NEW, SLOW_NEW).models as unknown[]), { id: 'sim-new', owned_by: 'tollgate-simulator', price: OLD }],
        channels: [...(configWith(NEW, SLOW_NEW).channels as unknown[]), { name: 'newer', type: 'simulator', models: ['sim-new'] }],
      })));
      supervisor.child.kill('SIGHUP');
      const reloaded = await waitFor(async () => {
        const log = await call(supervisor.url, 'GET', '/api/admin/audit?action=reload', { token: admin });
        return log.json.data.items.find((entry: any) => entry.actor === 'supervisor');
      }, 15_000, 100);
      assert.ok(reloaded, 'the SIGHUP reload is in the audit log');
      assert.equal(reloaded.details.generation, 2);
      for (let index = 0; index < 6; index += 1) {
        sequence += 1;
        assert.equal((await chat('sim-new', 'hello '.repeat(2 * sequence))).status, 200);
      }
      const byCli = await cliJson(['reload'], supervisor.dataDir) as { ok: boolean; generation: number };
      assert.equal(byCli.ok, true);
      assert.equal(byCli.generation, 3);
    });
  });
}
