// Issue 21, crash tests: the real `tollgate serve` with two workers under load, then kill -9 of a
// worker, of the supervisor, of both, and a worker frozen with SIGSTOP (the watchdog). Each ends
// with the money invariants (test/helpers/money.ts) read from the data dir.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { startMockUpstream, type MockUpstream } from '../../scripts/mock-upstream';
import { LmdbStore as Store } from '../../src/store/lmdb';
import { cliJson, FRONTS, startSupervisor, type SupervisedGateway } from '../helpers/gateway';
import { assertMoneyInvariants, moneySnapshot } from '../helpers/money';
import { chatConfig, createKey, sleep, writeConfigFile } from '../integration/chat-harness';

/** Content chunks of a mock stream and the pause between them: a call stays in flight ~1.5 s. */
const CHUNKS = 30;
const CHUNK_DELAY_MS = 50;
const CALLS = 12;

/** Pids of the live child processes of `parent` (from /proc). */
function childPids(parent: number): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === parent && fields[0] !== 'Z') pids.push(Number(entry));
    } catch { /* gone meanwhile */ }
  }
  return pids;
}

const alive = (pid: number) => { try { process.kill(pid, 0); return true; } catch { return false; } };

async function until(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

interface StreamCall { status: number; text: string; started: Promise<void>; done: Promise<void> }

/** A streaming chat call on a connection of its own; `started` resolves at its first bytes. */
function streamCall(url: string, key: string): StreamCall {
  const result = { status: 0, text: '' } as StreamCall;
  let markStarted!: () => void;
  result.started = new Promise((resolve) => { markStarted = resolve; });
  result.done = (async () => {
    try {
      const response = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', connection: 'close' },
        body: JSON.stringify({ model: 'mock-chat', stream: true, messages: [{ role: 'user', content: 'tell me a story' }] }),
      });
      result.status = response.status;
      const decoder = new TextDecoder();
      for await (const chunk of response.body!) {
        result.text += decoder.decode(chunk as Uint8Array, { stream: true });
        markStarted();
      }
    } catch { /* a connection cut by a killed worker */ }
    markStarted();
  })();
  return result;
}

const completed = (call: StreamCall) => call.status === 200 && call.text.endsWith('data: [DONE]\n\n') && !call.text.includes('"error"');

describe('crash tests under load (kill -9, SIGSTOP)', () => {
  let mock: MockUpstream;
  before(async () => { mock = await startMockUpstream({ record: false, chunks: CHUNKS, chunkDelayMs: CHUNK_DELAY_MS }); });
  after(async () => { await mock?.close(); });

  async function serve(front: string, limits: Record<string, unknown> = {}): Promise<{ gateway: SupervisedGateway; key: { id: number; key: string }; store: Store; before: Awaited<ReturnType<typeof moneySnapshot>> }> {
    const raw = chatConfig(mock.url);
    raw.limits = { ...(raw.limits as object), ...limits };
    const gateway = await startSupervisor({ workers: 2, configPath: writeConfigFile(raw), env: { TOLLGATE_FRONT: front } });
    await cliJson(['account', 'topup', '--account', 'admin', '--usd', '100'], gateway.dataDir);
    const key = await createKey(gateway.url, gateway.adminToken(), { remain_quota: 5_000_000 });
    const store = Store.open(gateway.dataDir);
    return { gateway, key, store, before: await moneySnapshot(store) };
  }

  async function load(url: string, key: string): Promise<StreamCall[]> {
    const calls = Array.from({ length: CALLS }, () => streamCall(url, key));
    await Promise.all(calls.map((call) => call.started));
    return calls;
  }

  for (const front of FRONTS) {
    test(`kill -9 of the supervisor (${front} front): the workers drain, every in-flight call finishes and is billed, then they exit`, async () => {
      const { gateway, key, store, before: snapshot } = await serve(front);
      try {
        const workers = childPids(gateway.child.pid!);
        assert.equal(workers.length, 2, 'two workers');
        const calls = await load(gateway.url, key.key);
        gateway.child.kill('SIGKILL');
        await Promise.all(calls.map((call) => call.done));
        assert.deepEqual(calls.filter((call) => !completed(call)).map((call) => call.text.slice(-200)), [], 'every in-flight call finished');
        await until(() => workers.every((pid) => !alive(pid)), 20_000, 'the orphaned workers to exit');
        const charged = await assertMoneyInvariants(store, snapshot, 'supervisor killed');
        const records = (await store.usage.list(1, { keyId: key.id }, 0, 100)).items;
        assert.equal(records.length, CALLS, 'no call unbilled');
        assert.ok(records.every((record) => record.end_reason === 'completed' && record.quota > 0));
        assert.equal(charged, records.reduce((sum, record) => sum + record.quota, 0));
        // the next start hands back the leases the drained workers still held
        const restarted = await startSupervisor({ workers: 1, dataDir: gateway.dataDir });
        await restarted.stop();
        assert.equal((await store.keys.byId(key.id))!.leased, 0, 'leases returned at the next start');
        await assertMoneyInvariants(store, snapshot, 'after the restart');
      } finally {
        await store.close();
        await gateway.stop('SIGKILL');
        for (const pid of childPids(gateway.child.pid!)) process.kill(pid, 'SIGKILL');
        rmSync(gateway.dataDir, { recursive: true, force: true });
      }
    });
  }

  test('kill -9 of a worker under load: the other worker\'s calls finish, a replacement serves, leases come back, nothing double-billed', async () => {
    const { gateway, key, store, before: snapshot } = await serve('uws');
    try {
      const [victim] = childPids(gateway.child.pid!);
      const calls = await load(gateway.url, key.key);
      process.kill(victim, 'SIGKILL');
      await Promise.all(calls.map((call) => call.done));
      const finished = calls.filter(completed).length;
      await until(() => childPids(gateway.child.pid!).filter((pid) => pid !== victim).length === 2, 15_000, 'a replacement worker');
      const after = streamCall(gateway.url, key.key);
      await after.done;
      assert.ok(completed(after), 'the gateway serves after the crash');
      assert.equal(await gateway.stop('SIGTERM'), 0);
      const charged = await assertMoneyInvariants(store, snapshot, 'worker killed');
      const records = (await store.usage.list(1, { keyId: key.id }, 0, 100)).items;
      // calls the killed worker had not committed go unbilled; none is billed twice
      assert.ok(records.length >= finished + 1 && records.length <= CALLS + 1, `${records.length} records for ${finished + 1} finished calls`);
      assert.ok(charged > 0);
      assert.equal((await store.keys.byId(key.id))!.leased, 0, 'the dead worker\'s leases were handed back');
      assert.match(gateway.output(), /refunded the leases of a dead worker|worker exited/);
    } finally {
      await store.close();
      await gateway.stop('SIGKILL');
      rmSync(gateway.dataDir, { recursive: true, force: true });
    }
  });

  test('kill -9 of a worker and of the supervisor under load: the surviving worker drains; money exact after the next start', async () => {
    const { gateway, key, store, before: snapshot } = await serve('uws');
    try {
      const [victim, survivor] = childPids(gateway.child.pid!);
      const calls = await load(gateway.url, key.key);
      process.kill(victim, 'SIGKILL');
      gateway.child.kill('SIGKILL');
      await Promise.all(calls.map((call) => call.done));
      await until(() => !alive(survivor), 20_000, 'the surviving worker to drain and exit');
      const finished = calls.filter(completed).length;
      assert.ok(finished > 0, 'the surviving worker\'s calls finished');
      const restarted = await startSupervisor({ workers: 1, dataDir: gateway.dataDir });
      await restarted.stop();
      await assertMoneyInvariants(store, snapshot, 'worker and supervisor killed');
      const records = (await store.usage.list(1, { keyId: key.id }, 0, 100)).items;
      assert.ok(records.length >= finished && records.length <= CALLS, `${records.length} records for ${finished} finished calls`);
      assert.equal((await store.keys.byId(key.id))!.leased, 0, 'every lease returned');
    } finally {
      await store.close();
      await gateway.stop('SIGKILL');
      rmSync(gateway.dataDir, { recursive: true, force: true });
    }
  });

  test('watchdog: a worker frozen with SIGSTOP is logged, killed and replaced, its leases handed back first', async () => {
    const { gateway, key, store, before: snapshot } = await serve('uws', { watchdog_ms: 2000 });
    try {
      // calls on fresh connections reach both workers: each takes a lease on the key
      await until(async () => {
        const calls = Array.from({ length: 6 }, () => streamCall(gateway.url, key.key));
        await Promise.all(calls.map((call) => call.done));
        return Object.keys((await store.keys.byId(key.id))!.leases).length === 2;
      }, 20_000, 'both workers to hold a lease');
      const [frozen] = childPids(gateway.child.pid!);
      process.kill(frozen, 'SIGSTOP');
      const stoppedAt = Date.now();
      await until(() => !alive(frozen), 20_000, 'the watchdog to kill the frozen worker');
      assert.ok(Date.now() - stoppedAt >= 1500, 'not before the bound');
      const line = gateway.output().split('\n').find((text) => text.includes('worker event loop unresponsive'));
      assert.ok(line, gateway.output().slice(-2000));
      const logged = JSON.parse(line) as { pid: number; worker: string; watchdog_ms: number };
      assert.equal(logged.pid, frozen);
      assert.equal(logged.watchdog_ms, 2000);
      await until(() => childPids(gateway.child.pid!).length === 2, 15_000, 'a replacement worker');
      await until(async () => !(logged.worker in (await store.keys.byId(key.id))!.leases), 5000, 'the frozen worker\'s lease handed back');
      const after = streamCall(gateway.url, key.key);
      await after.done;
      assert.ok(completed(after), 'served after the replacement');
      assert.equal(await gateway.stop('SIGTERM'), 0);
      await assertMoneyInvariants(store, snapshot, 'watchdog');
    } finally {
      await store.close();
      await gateway.stop('SIGKILL');
      rmSync(gateway.dataDir, { recursive: true, force: true });
    }
  });
});
