// How the LMDB store encodes its records: self-describing msgpack, never a new shared structure
// (saving one is a nested write from inside the encoder that lost commits with several writer
// processes), while records an older data dir wrote with shared structures still read.
// And writer processes sharing one data dir never hand out an id twice nor lose a key, also while
// they open the store among each other's commits with no process serving the data dir.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { apiKeyDigest, generateApiKey, loadMasterKey, maskKey, seal } from '../../src/auth/secrets';
import { KEY_DEFAULTS } from '../../src/formats/token-fields';
import { useTempStore } from '../helpers/temp-store';

const run = promisify(execFile);
const STRUCTURES = Symbol.for('tollgate.structures');
const LMDB_MODULE = require.resolve('lmdb');
const STORE_WRITER = join(__dirname, '..', 'helpers', 'store-writer.js');
const temp = useTempStore('tollgate-lmdb-records-');

async function accountWithKey(name: string): Promise<{ accountId: number; keyId: number }> {
  const account = await temp.store.accounts.create(name, 'default', 5_000);
  assert.notEqual(account, 'exists');
  const accountId = (account as { id: number }).id;
  const secret = generateApiKey();
  const key = await temp.store.keys.create(accountId, { ...KEY_DEFAULTS, name: `${name}-key` }, {
    sealed: seal(loadMasterKey(temp.dataDir, undefined), secret), masked: maskKey(secret), digest: apiKeyDigest(secret).toString('hex'),
  }, 10);
  assert.notEqual(key, 'limit');
  return { accountId, keyId: (key as { id: number }).id };
}

test('no sub-database stores a shared record structure, whatever the store writes', async () => {
  const { accountId, keyId } = await accountWithKey('owner');
  await temp.store.accounts.topUp(accountId, 100);
  await temp.store.keys.setStatus(accountId, keyId, 2);
  await temp.store.accounts.addAccessToken('ab'.repeat(32), accountId, 'read');
  await temp.store.audit.append({ actor: 'cli', action: 'account.topup', account_id: accountId, details: { quota: 100 } });
  const { databases } = temp.store;
  for (const [name, database] of Object.entries(databases)) {
    if (name === 'root' || name === 'ephemeralRoot' || name === 'ephemeral') continue;
    assert.equal((database as { getBinary(key: unknown): unknown }).getBinary(STRUCTURES), undefined, `${name} holds shared structures`);
  }
  const record = temp.store.keys.get(accountId, keyId);
  assert.equal(record?.status, 2);
  assert.equal(record?.name, 'owner-key');
});

test('records an older data dir wrote with shared structures still read, and are rewritten self-describing', async () => {
  const { accountId, keyId } = await accountWithKey('legacy');
  const keysPath = join(temp.dataDir, 'tollgate.lmdb');
  await temp.store.close();
  // rewrite the key the way the store used to: msgpackr records with a shared structure
  execFileSync(process.execPath, ['-e', `
    const { open } = require(${JSON.stringify(LMDB_MODULE)});
    const root = open({ path: ${JSON.stringify(keysPath)}, maxDbs: 16, compression: false, mapSize: 2 * 1024 ** 3 });
    const keys = root.openDB({ name: 'keys', encoding: 'msgpack', sharedStructuresKey: Symbol.for('tollgate.structures') });
    const record = keys.get(${keyId});
    keys.transactionSync(() => keys.putSync(${keyId}, { ...record, name: 'legacy-renamed' }));
    if (!keys.getBinary(Symbol.for('tollgate.structures'))) { console.error('no structure was stored'); process.exit(1); }
    root.close();
  `], { stdio: ['ignore', 'ignore', 'inherit'] });
  const { LmdbStore } = require('../../src/store/lmdb') as typeof import('../../src/store/lmdb');
  temp.store = LmdbStore.open(temp.dataDir);
  assert.equal(temp.store.keys.get(accountId, keyId)?.name, 'legacy-renamed', 'a record encoded with the stored structure decodes');
  await temp.store.keys.setStatus(accountId, keyId, 2);
  const updated = temp.store.keys.get(accountId, keyId);
  assert.equal(updated?.status, 2);
  assert.equal(updated?.name, 'legacy-renamed');
});

test('three processes creating keys at once hand out distinct ids and lose none', async () => {
  const { accountId } = await accountWithKey('busy');
  const writers = [1, 2, 3].map(() => run(process.execPath, [STORE_WRITER, temp.dataDir, String(accountId), '150']));
  const ids = (await Promise.all(writers)).flatMap((result) => JSON.parse(result.stdout) as number[]);
  assert.equal(ids.length, 450);
  assert.equal(new Set(ids).size, 450, 'no id was handed out twice');
  assert.equal(temp.store.keys.list(accountId, 0, 10).total, 451);
});

// Bounded in count: 3,000 commits, 150 opens. Many of the opens fall among another process's
// commits; an open that no process holds the write lock for can make the next write transaction
// overwrite the last commit (open-gate.ts).
const REOPENING_WRITERS = 3;
const REOPENING_KEYS = 1000;
const REOPENING_OPENS = 50;
test('processes creating keys one at a time while they open and close the store again and again, nothing serving the data dir: every id once, none lost', async () => {
  const { accountId } = await accountWithKey('reopening');
  const writers = Array.from({ length: REOPENING_WRITERS }, () => run(process.execPath,
    [STORE_WRITER, temp.dataDir, String(accountId), String(REOPENING_KEYS), String(REOPENING_OPENS)], { timeout: 60_000 }));
  const lists = (await Promise.all(writers)).map((result) => JSON.parse(result.stdout) as number[]);
  const ids = lists.flat();
  assert.equal(ids.length, REOPENING_WRITERS * REOPENING_KEYS);
  assert.equal(new Set(ids).size, ids.length, `${ids.length - new Set(ids).size} ids handed out twice`);
  for (const list of lists) assert.ok(list.every((id, index) => index === 0 || id > list[index - 1]), 'a writer\'s ids only grow');
  assert.equal(temp.store.keys.list(accountId, 0, 10).total, ids.length + 1, 'every key is kept');
});
