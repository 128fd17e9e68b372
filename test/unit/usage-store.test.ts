// The usage log as stored: a billing batch writes one entry per account (its rows as JSON text), older
// data dirs hold one record object per entry; listing pages newest first across both, with filters.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sumCharges } from '../../src/billing/charge-batches';
import { packUsageRows, toUsageRow, UsageRowBatch, type Charge, type UsageRecord } from '../../src/store';
import { useTempStore } from '../helpers/temp-store';

const temp = useTempStore('tollgate-usage-');

function record(accountId: number, keyId: number, time: number, quota: number, model = 'm-1'): Omit<UsageRecord, 'id'> {
  return {
    time, account_id: accountId, key_id: keyId, key_name: `key-${keyId}`, model, channel: 'c', endpoint: 'chat.completions',
    prompt_tokens: 3, completion_tokens: 4, cache_read_tokens: 0, cache_creation_tokens: 0, quota, latency_ms: 5,
    first_byte_ms: null, status: 200, end_reason: 'completed', usage_source: 'upstream', stream: false,
  };
}

test('records of a batch are numbered account by account, in order, and listed newest first with filters and pages', async () => {
  // a record object written one per entry, as data dirs from before batched entries hold it
  temp.store.databases.usage.putSync([1, 1], { ...record(1, 10, 1_000, 7), id: 1 });
  temp.store.databases.meta.putSync('seq:usage', 1);

  const batch = [record(1, 10, 1_001, 1), record(2, 20, 1_001, 2), record(1, 11, 1_002, 3, 'm-2'), record(1, 10, 1_003, 4)];
  const charges: Charge[] = batch.map((item) => ({ keyId: item.key_id, keyEpoch: -1, accountId: item.account_id, accountEpoch: -1, quota: item.quota }));
  await temp.store.ledger.commit('w1', sumCharges(charges), packUsageRows(batch.map((item) => toUsageRow(item))));

  const all = temp.store.usage.list(1, {}, 0, 10);
  assert.deepEqual(all.items.map((item) => [item.id, item.quota]), [[4, 4], [3, 3], [2, 1], [1, 7]]);
  assert.equal(all.total, 4);
  assert.deepEqual(all.items[0], { ...record(1, 10, 1_003, 4), id: 4 }, 'every field survives the round trip');
  assert.deepEqual(temp.store.usage.list(2, {}, 0, 10).items.map((item) => [item.id, item.key_id]), [[5, 20]]);

  assert.deepEqual(temp.store.usage.list(1, { keyId: 10 }, 0, 10).items.map((item) => item.id), [4, 2, 1]);
  assert.deepEqual(temp.store.usage.list(1, { model: 'm-2' }, 0, 10).items.map((item) => item.id), [3]);
  assert.deepEqual(temp.store.usage.list(1, { from: 1_001, to: 1_002 }, 0, 10).items.map((item) => item.id), [3, 2]);
  const second = temp.store.usage.list(1, {}, 1, 3);
  assert.deepEqual([second.items.map((item) => item.id), second.total], [[1], 4]);

  assert.deepEqual(temp.store.usage.sumForKey(1, 10), { quota: 12, count: 3 });
  assert.equal(temp.store.keys.byId(10), undefined, 'charges of unknown keys change nothing');
});

test('a usage row written field by field is JSON.stringify of the row, and a batch packs as packUsageRows does', () => {
  const base: Omit<UsageRecord, 'id'> = {
    time: 1_795_776_239, account_id: 1, key_id: 2, key_name: 'customer-1', model: 'gpt-4o', channel: 'main', endpoint: 'chat.completions',
    prompt_tokens: 1200, completion_tokens: 64, cache_read_tokens: 0, cache_creation_tokens: 0, quota: 1234, latency_ms: 812,
    first_byte_ms: 95, status: 200, end_reason: 'completed', usage_source: 'upstream', stream: true,
  };
  const records: Omit<UsageRecord, 'id'>[] = [
    base,
    { ...base, account_id: 7, key_name: 'név "quoted" \\ \u2028 名前 🌍', model: 'a\nb', first_byte_ms: null, stream: false, usage_source: 'estimated', latency_ms: 0 },
    { ...base, quota: 0, status: 502, end_reason: 'failed', prompt_tokens: Number.NaN, completion_tokens: Number.POSITIVE_INFINITY },
    { ...base, account_id: 7, key_name: '', channel: '', quota: 5e14 },
  ];
  for (const record of records) {
    const single = new UsageRowBatch();
    single.add(record);
    assert.deepEqual(single.groups(), [{ account: record.account_id, count: 1, rows: JSON.stringify([toUsageRow(record)]) }]);
  }
  const batch = new UsageRowBatch();
  for (const record of records) batch.add(record);
  assert.equal(batch.count, 4);
  assert.deepEqual(batch.groups(), packUsageRows(records.map(toUsageRow)));
  // a failed batch goes back in front of the rows settled since, per account
  const later = new UsageRowBatch();
  later.add({ ...base, quota: 99 });
  later.prepend(batch);
  assert.equal(later.count, 5);
  assert.deepEqual(later.groups(), packUsageRows([...records, { ...base, quota: 99 }].map(toUsageRow)));
});
