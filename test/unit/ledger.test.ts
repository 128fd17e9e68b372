// The quota ledger (DESIGN §5) against a real Store in a temp dir: reserve → settle → refund,
// 429s that say key or account, two Ledger instances (two workers) sharing one store never
// overspending a cap, an epoch bump on a cap change, and the reaping of a dead worker's leases.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { getPriority } from 'node:os';
import { afterEach, beforeEach, test } from 'node:test';
import { apiKeyDigest, generateApiKey, loadMasterKey, maskKey, seal } from '../../src/auth/secrets';
import { KEY_FRESH_MS, Ledger } from '../../src/billing/ledger';
import { KEY_DEFAULTS } from '../../src/formats/token-fields';
import { createLogger } from '../../src/log';
import { LEDGER_WRITER_NICE, type KeyRecord, type UsageRecord } from '../../src/store';
import { LmdbStore as Store } from '../../src/store/lmdb';
import { LedgerWriter } from '../../src/store/lmdb/ledger-writer';
import { tempDir } from '../helpers/gateway';

let dataDir: string;
let store: Store;
let ledgers: Ledger[];
const log = createLogger('error');

beforeEach(() => { dataDir = tempDir('tollgate-ledger-'); store = Store.open(dataDir); ledgers = []; });
afterEach(async () => {
  for (const ledger of ledgers) await ledger.close();
  await store.close();
  rmSync(dataDir, { recursive: true, force: true });
});

function ledger(workerId: string): Ledger {
  const created = new Ledger(store, workerId, log, { flushMs: 1, idleReturnMs: 60_000 });
  ledgers.push(created);
  return created;
}

async function setup(balance: number, keyFields: Partial<KeyRecord> = {}): Promise<{ accountId: number; keyId: number }> {
  const account = await store.accounts.create(`account-${Math.random()}`, 'default', balance);
  assert.notEqual(account, 'exists');
  const accountId = (account as { id: number }).id;
  const secret = generateApiKey();
  const masterKey = loadMasterKey(dataDir, undefined);
  const key = await store.keys.create(accountId, { ...KEY_DEFAULTS, remain_quota: 1000, ...keyFields },
    { sealed: seal(masterKey, secret), masked: maskKey(secret), digest: apiKeyDigest(secret).toString('hex') }, 1000);
  assert.notEqual(key, 'limit');
  return { accountId, keyId: (key as KeyRecord).id };
}

/** what a request sees: the records as they are in the store now */
const fresh = (ids: { accountId: number; keyId: number }) => ({ key: store.keys.byId(ids.keyId)!, account: store.accounts.get(ids.accountId)! });

function record(ids: { accountId: number; keyId: number }, quota: number): Omit<UsageRecord, 'id'> {
  return {
    time: Math.floor(Date.now() / 1000), account_id: ids.accountId, key_id: ids.keyId, key_name: 'k', model: 'm', channel: 'c',
    endpoint: 'chat.completions', prompt_tokens: 1, completion_tokens: 1, cache_read_tokens: 0, cache_creation_tokens: 0, quota,
    latency_ms: 1, first_byte_ms: 1, status: 200, end_reason: 'completed', usage_source: 'upstream', stream: false,
  };
}

async function insufficient(action: () => Promise<unknown>, which: RegExp): Promise<void> {
  await assert.rejects(action, (error: any) => error.status === 429 && error.code === 'insufficient_quota' && which.test(error.message));
}

test('reserve → settle charges the settled amount on key and account, with one usage record', async () => {
  const ids = await setup(10_000, { remain_quota: 1000 });
  const worker = ledger('w1');
  const { key, account } = fresh(ids);
  const reservation = await worker.reserve(key, account, 300);
  assert.ok(store.keys.byId(ids.keyId)!.leased >= 300, 'a lease was taken from the key');
  assert.equal(store.keys.byId(ids.keyId)!.used_quota, 0, 'leases are not usage');
  worker.settle(reservation, 120, record(ids, 120));
  worker.settle(reservation, 999, record(ids, 999));   // a second settle of the same reservation is ignored
  await worker.flush();
  const after = fresh(ids);
  assert.equal(after.key.used_quota, 120);
  assert.equal(after.key.remain_quota, 880);
  assert.equal(after.account.balance, 9880);
  assert.equal(after.account.used_quota, 120);
  assert.deepEqual(store.usage.sumForKey(ids.accountId, ids.keyId), { quota: 120, count: 1 });
  await worker.close();
  assert.equal(store.keys.byId(ids.keyId)!.leased, 0, 'close returns the unused lease');
  assert.equal(store.accounts.get(ids.accountId)!.leased, 0);
});

test('refund charges nothing; the reserved amount is free again', async () => {
  const ids = await setup(10_000, { remain_quota: 500 });
  const worker = ledger('w1');
  for (let index = 0; index < 10; index += 1) {
    const { key, account } = fresh(ids);
    worker.refund(await worker.reserve(key, account, 500));
  }
  await worker.flush();
  assert.equal(fresh(ids).key.remain_quota, 500);
  assert.equal(fresh(ids).key.used_quota, 0);
});

test('429 insufficient_quota says key or account', async () => {
  const capped = await setup(10_000, { remain_quota: 100 });
  const worker = ledger('w1');
  await insufficient(() => worker.reserve(fresh(capped).key, fresh(capped).account, 101), /key/);
  await worker.reserve(fresh(capped).key, fresh(capped).account, 100);
  await insufficient(() => worker.reserve(fresh(capped).key, fresh(capped).account, 1), /key/);
  const poor = await setup(50, { remain_quota: 1000 });
  await insufficient(() => worker.reserve(fresh(poor).key, fresh(poor).account, 51), /account/);
  const unlimited = await setup(50, { unlimited_quota: true, remain_quota: 0 });
  await insufficient(() => worker.reserve(fresh(unlimited).key, fresh(unlimited).account, 51), /account/);
  await worker.reserve(fresh(unlimited).key, fresh(unlimited).account, 50);
});

test('two workers sharing one store never overspend a cap', async () => {
  const cap = 10_000;
  const ids = await setup(1_000_000, { remain_quota: cap });
  const workers = [ledger('w1'), ledger('w2')];
  let charged = 0;
  let refused = 0;
  // seeded amounts; each call is charged what it reserved (the worst case for the cap)
  let state = 99;
  for (let index = 0; index < 400; index += 1) {
    state = (state * 1103515245 + 12345) % 2147483648;
    const amount = 10 + (state % 190);
    const worker = workers[index % 2];
    const { key, account } = fresh(ids);
    try {
      const reservation = await worker.reserve(key, account, amount);
      worker.settle(reservation, amount, record(ids, amount));
      charged += amount;
    } catch (error) {
      assert.equal((error as { code?: string }).code, 'insufficient_quota');
      refused += 1;
    }
    if (index % 7 === 0) await worker.flush();
  }
  await Promise.all(workers.map((worker) => worker.flush()));
  assert.ok(refused > 0, 'the cap was reached');
  assert.ok(charged <= cap, `charged ${charged} ≤ cap ${cap}`);
  const after = fresh(ids);
  assert.equal(after.key.used_quota, charged);
  assert.equal(after.key.remain_quota, cap - charged);
  assert.equal(store.usage.sumForKey(ids.accountId, ids.keyId).quota, charged);
  assert.ok(after.key.leased <= after.key.remain_quota, 'leases never exceed what remains');
  assert.ok(charged > cap - 2 * 200, `the cap is nearly used up (${charged} of ${cap}), not stranded in leases`);
});

test('a cap change bumps the epoch: an old lease cannot be drawn on', async () => {
  const ids = await setup(1_000_000, { remain_quota: 100_000 });
  const worker = ledger('w1');
  const first = await worker.reserve(fresh(ids).key, fresh(ids).account, 100);
  worker.settle(first, 100, record(ids, 100));
  await worker.flush();
  assert.ok(store.keys.byId(ids.keyId)!.leased > 1000, 'the worker holds a large lease');
  const key = store.keys.byId(ids.keyId)!;
  await store.keys.replace(ids.accountId, ids.keyId, { ...key, remain_quota: 50 });
  const bumped = store.keys.byId(ids.keyId)!;
  assert.equal(bumped.epoch, key.epoch + 1);
  assert.equal(bumped.leased, 0);
  await insufficient(() => worker.reserve(fresh(ids).key, fresh(ids).account, 100), /key/);
  const small = await worker.reserve(fresh(ids).key, fresh(ids).account, 50);
  worker.settle(small, 50, record(ids, 50));
  await worker.flush();
  assert.equal(fresh(ids).key.remain_quota, 0);
  await insufficient(() => worker.reserve(fresh(ids).key, fresh(ids).account, 1), /key/);
});

test('a cap changed by another worker while a call is in flight: the call is charged from the new cap, in both workers\' books', async () => {
  const ids = await setup(1_000_000, { remain_quota: 100_000 });
  const serving = ledger('w-serving');
  const owner = ledger('w-owner');
  const call = await serving.reserve(fresh(ids).key, fresh(ids).account, 5_000);
  // the owner's worker writes the PUT; the serving worker has not read the key since the call's admission
  await store.keys.replace(ids.accountId, ids.keyId, { ...fresh(ids).key, remain_quota: 300 });
  await new Promise((resolve) => setTimeout(resolve, KEY_FRESH_MS + 5));
  const charged = serving.settle(call, 4_000, record(ids, 4_000));
  await serving.flush();
  assert.ok(charged <= 4_000);
  const key = store.keys.byId(ids.keyId)!;
  assert.deepEqual([key.used_quota, key.remain_quota], [300, 0], 'charged what the new cap had, remain_quota not clamped');
  assert.deepEqual(store.usage.list(ids.accountId, {}, 0, 10).items.map((item) => [item.quota, item.end_reason]), [[300, 'quota_bounded']]);
  // nothing is left of the new cap for either worker
  await insufficient(() => owner.reserve(fresh(ids).key, fresh(ids).account, 1), /key/);
  await insufficient(() => serving.reserve(fresh(ids).key, fresh(ids).account, 1), /key/);
});

test('a dead worker: reap returns its leases (open reservations included)', async () => {
  const ids = await setup(100_000, { remain_quota: 5000 });
  const dead = new Ledger(store, 'dead-worker', log, { flushMs: 1, idleReturnMs: 60_000 });
  await dead.reserve(fresh(ids).key, fresh(ids).account, 400);
  await dead.reserve(fresh(ids).key, fresh(ids).account, 400);
  await dead.whenIdle();
  assert.ok(fresh(ids).key.leased >= 800);
  assert.ok(fresh(ids).account.leased >= 800);
  const other = ledger('alive');
  const kept = await other.reserve(fresh(ids).key, fresh(ids).account, 100);
  await other.whenIdle();
  const otherLease = fresh(ids).key.leases.alive;
  assert.ok(otherLease >= 100);
  assert.ok(store.ledger.reapSync('dead-worker') >= 2);
  assert.equal(fresh(ids).key.leases['dead-worker'], undefined);
  assert.equal(fresh(ids).key.leased, otherLease, 'only the dead worker lost its lease');
  other.settle(kept, 100, record(ids, 100));
  await other.close();
  const after = fresh(ids);
  assert.equal(after.key.leased, 0);
  assert.equal(after.account.leased, 0);
  assert.equal(after.key.remain_quota + after.key.used_quota, 5000);
});

test('through a worker\'s ledger writer thread: batches committed in order; once the thread is gone the worker\'s leases are reaped', async () => {
  const ids = await setup(100_000, { remain_quota: 5000 });
  const { writer, nice } = await LedgerWriter.start(dataDir);
  // nicer than this process by LEDGER_WRITER_NICE (the suite may itself run under nice)
  if (process.platform === 'linux') assert.equal(nice, Math.min(19, getPriority() + LEDGER_WRITER_NICE));
  try {
    const worker = new Ledger(store, 'thread-worker', log,
      { flushMs: 1, idleReturnMs: 60_000, commit: (charges, usage) => writer.commit('thread-worker', charges, usage) });
    await worker.reserve(fresh(ids).key, fresh(ids).account, 400); // still open when the worker "dies"
    for (const quota of [50, 51, 52]) {
      worker.settle(await worker.reserve(fresh(ids).key, fresh(ids).account, 100), quota, record(ids, quota));
      void worker.flush(); // three batches handed over back to back
    }
    await worker.flush();
    assert.equal(fresh(ids).key.used_quota, 153);
    assert.equal(fresh(ids).account.balance, 100_000 - 153);
    assert.deepEqual(store.usage.sumForKey(ids.accountId, ids.keyId), { quota: 153, count: 3 });
    assert.ok(fresh(ids).key.leased > 0, 'the worker still holds a lease');
  } finally {
    await writer.close();
  }
  await assert.rejects(writer.commit('thread-worker', [], []), /closed/);
  // the worker "died" with its thread: the supervisor returns what it had leased
  assert.ok(store.ledger.reapSync('thread-worker') >= 2);
  const after = fresh(ids);
  assert.equal(after.key.leased, 0);
  assert.equal(after.account.leased, 0);
  assert.equal(after.key.remain_quota + after.key.used_quota, 5000);
  assert.equal(after.key.used_quota, 153);
});

test('quota held in another worker\'s lease is reclaimed for a request that needs it', async () => {
  const ids = await setup(10_000_000, { remain_quota: 500_000 });
  const holder = ledger('holder');
  // the holder serves a small request and keeps a lease (a quarter of what was free, at most)
  holder.settle(await holder.reserve(fresh(ids).key, fresh(ids).account, 1_000), 1_000, record(ids, 1_000));
  await holder.flush();
  await holder.whenIdle();
  const held = fresh(ids).key.leases.holder;
  assert.ok(held > 0, 'the holder keeps a lease');
  const free = fresh(ids).key.remain_quota - fresh(ids).key.leased;
  const big = free + Math.floor(held / 2);   // more than is free, less than free + what the holder keeps

  const withoutReclaim = ledger('plain');
  await insufficient(() => withoutReclaim.reserve(fresh(ids).key, fresh(ids).account, big), /key/);

  let asked = 0;
  const needy = new Ledger(store, 'needy', log, {
    flushMs: 1, idleReturnMs: 60_000,
    reclaim: async (keyId, accountId) => { asked += 1; await holder.returnUnused(keyId, accountId); },
  });
  ledgers.push(needy);
  const reservation = await needy.reserve(fresh(ids).key, fresh(ids).account, big);
  assert.equal(asked, 1);
  assert.equal(fresh(ids).key.leases.holder ?? 0, 0, 'the holder gave back what it did not use');
  needy.settle(reservation, big, record(ids, big));
  await needy.flush();
  const after = fresh(ids).key;
  assert.equal(after.used_quota, 1_000 + big);
  assert.ok(after.leased <= after.remain_quota, 'leases never exceed what remains');
});

test('a batch whose commit failed goes again, whole, with the next one: no charge or usage record lost or doubled', async () => {
  const ids = await setup(1_000_000, { remain_quota: 100_000 });
  let failNext = true;
  const committed: { quota: number; records: number }[] = [];
  const failing = new Ledger(store, 'w-retry', log, {
    flushMs: 60_000, idleReturnMs: 60_000,
    commit: async (charges, usage) => {
      if (failNext) { failNext = false; throw new Error('disk full'); }
      committed.push({ quota: charges.reduce((sum, charge) => sum + charge.quota, 0), records: usage.reduce((sum, group) => sum + group.count, 0) });
      await store.ledger.commit('w-retry', charges, usage);
    },
  });
  ledgers.push(failing);
  for (const quota of [5, 7]) failing.settle(await failing.reserve(fresh(ids).key, fresh(ids).account, 10), quota, record(ids, quota));
  await failing.flush();
  assert.deepEqual(committed, [], 'the first commit failed');
  failing.settle(await failing.reserve(fresh(ids).key, fresh(ids).account, 11), 11, record(ids, 11));
  await failing.flush();
  assert.deepEqual(committed, [{ quota: 23, records: 3 }]);
  assert.deepEqual(store.usage.list(ids.accountId, {}, 0, 10).items.map((item) => item.quota), [11, 7, 5]);
  assert.equal(store.keys.byId(ids.keyId)!.used_quota, 23);
});

test('a charge is never more than its reservation: it grows from the lease room first, and past that is bounded with no balance clamped', async () => {
  const ids = await setup(1_000, { remain_quota: 300 });
  const worker = ledger('w-bound');
  const reservation = await worker.reserve(fresh(ids).key, fresh(ids).account, 50);
  // the worker leased up to a quarter of the free cap beyond need: usage priced a little above the
  // reservation is covered by the lease's room
  const room = worker.chargeable(reservation, 60);
  assert.equal(room, 60, 'grown by 10 from the lease');
  assert.equal(reservation.amount, 60);
  // far above what the key's cap (300) allows: the charge is bounded by what could be reserved
  const bounded = worker.chargeable(reservation, 1_000_000_000);
  assert.ok(bounded >= 60 && bounded <= 300, `bounded to ${bounded}`);
  worker.settle(reservation, 1_000_000_000, record(ids, 1_000_000_000));   // a caller that skipped chargeable: bounded all the same
  await worker.flush();
  const key = store.keys.byId(ids.keyId)!;
  const account = store.accounts.get(ids.accountId)!;
  assert.equal(key.used_quota, bounded);
  assert.equal(key.remain_quota, 300 - bounded);
  assert.equal(account.balance, 1_000 - bounded, 'the balance fell by exactly the charge: nothing clamped');
  assert.deepEqual(store.usage.list(ids.accountId, {}, 0, 10).items.map((item) => item.quota), [bounded]);
});

test('a burst of concurrent reservations on an ample balance all succeed: a lease growth covers the reservations waiting for it', async () => {
  const ids = await setup(1e12, { unlimited_quota: true });
  const worker = ledger('w1');
  const { key, account } = fresh(ids);
  // 2,000 calls arrive at once, each needing 2,500 quota: the usual lease slice (128 calls' worth, at
  // most 500,000) covers a fifth of them; the ones waiting for it must not give up after a few growths
  const settled = await Promise.allSettled(Array.from({ length: 2000 }, () => worker.reserve(key, account, 2_500)));
  const refused = settled.filter((entry) => entry.status === 'rejected');
  assert.equal(refused.length, 0, `refused: ${refused.length}, first: ${(refused[0] as PromiseRejectedResult | undefined)?.reason?.message}`);
  for (const entry of settled) if (entry.status === 'fulfilled') worker.refund(entry.value);
});
