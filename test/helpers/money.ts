// The money invariants every scenario ends with (README, Operations → Money):
//   - an account's balance decrease equals the sum of its usage records, which equals its used_quota;
//   - each key's used_quota equals the sum of its records, and a capped key never passes its cap;
//   - no balance was clamped: the decrease is exactly what the records say, never less.
// Take a snapshot before the scenario, let the ledger commit (flush), then check.
import assert from 'node:assert/strict';
import type { Store } from '../../src/store';

export interface MoneySnapshot {
  accounts: Map<number, { balance: number; used: number }>;
  keys: Map<number, { accountId: number; cap: number | null; used: number }>;
}

/** Every account and key with its money figures now. `cap` = remain_quota + used_quota for capped keys. */
export async function moneySnapshot(store: Store): Promise<MoneySnapshot> {
  const accounts = new Map<number, { balance: number; used: number }>();
  const keys = new Map<number, { accountId: number; cap: number | null; used: number }>();
  for (const account of (await store.accounts.list())) {
    accounts.set(account.id, { balance: account.balance, used: account.used_quota });
    for (let page = 0; ; page += 1) {
      const listed = await store.keys.list(account.id, page, 100);
      for (const key of listed.items) {
        keys.set(key.id, { accountId: account.id, cap: key.unlimited_quota ? null : key.remain_quota + key.used_quota, used: key.used_quota });
      }
      if ((page + 1) * 100 >= listed.total) break;
    }
  }
  return { accounts, keys };
}

/** Sum of record quota per key and per account, over every usage record in the store. */
async function recordSums(store: Store, snapshot: MoneySnapshot): Promise<{ perKey: Map<number, number>; perAccount: Map<number, number> }> {
  const perKey = new Map<number, number>();
  const perAccount = new Map<number, number>();
  for (const [keyId, key] of snapshot.keys) {
    const sum = (await store.usage.sumForKey(key.accountId, keyId)).quota;
    perKey.set(keyId, sum);
    perAccount.set(key.accountId, (perAccount.get(key.accountId) ?? 0) + sum);
  }
  return { perKey, perAccount };
}

/**
 * Asserts the invariants between `before` (taken at the start) and the store now. Keys created
 * during the scenario count from zero. Returns the total quota charged, for the test's own checks.
 */
export async function assertMoneyInvariants(store: Store, before: MoneySnapshot, label = ''): Promise<number> {
  const after = await moneySnapshot(store);
  const at = label ? ` (${label})` : '';
  const sums = await recordSums(store, after);
  let charged = 0;
  for (const [keyId, key] of after.keys) {
    const start = before.keys.get(keyId);
    const usedDelta = key.used - (start?.used ?? 0);
    const records = sums.perKey.get(keyId) ?? 0;
    assert.equal(key.used, records, `key ${keyId}: used_quota ${key.used} ≠ sum of its usage records ${records}${at}`);
    const cap = start?.cap ?? key.cap;
    if (cap !== null && key.cap !== null && cap === key.cap) {
      assert.ok(key.used <= cap, `key ${keyId}: used_quota ${key.used} passed its cap ${cap}${at}`);
    }
    assert.ok(usedDelta >= 0, `key ${keyId}: used_quota went down by ${-usedDelta}${at}`);
  }
  for (const [accountId, account] of after.accounts) {
    const start = before.accounts.get(accountId) ?? { balance: account.balance, used: 0 };
    const decrease = start.balance - account.balance;
    const usedDelta = account.used - start.used;
    const records = sums.perAccount.get(accountId) ?? 0;
    assert.ok(account.balance >= 0, `account ${accountId}: balance ${account.balance} below 0${at}`);
    assert.equal(usedDelta, decrease, `account ${accountId}: used_quota grew by ${usedDelta} but the balance fell by ${decrease} (clamped?)${at}`);
    assert.equal(account.used, records, `account ${accountId}: used_quota ${account.used} ≠ sum of its usage records ${records}${at}`);
    charged += decrease;
  }
  return charged;
}
