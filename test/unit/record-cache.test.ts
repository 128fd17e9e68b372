// The hot-path lookups (key by digest, its account) keep decoded records but check the stored bytes
// on every read: a change made by another process is seen by the very next lookup.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { apiKeyDigest, generateApiKey, loadMasterKey, maskKey, seal } from '../../src/auth/secrets';
import { KEY_DEFAULTS } from '../../src/formats/token-fields';
import { useTempStore } from '../helpers/temp-store';

const STORE_MODULE = join(__dirname, '..', '..', 'src', 'store', 'lmdb');

const temp = useTempStore('tollgate-record-cache-');

const run = promisify(execFile);

/**
 * Runs `body` (with `store` open on the same data dir) in another process, then waits a few ms:
 * lmdb renews this process's read snapshot on a timer, so a read right after a foreign commit in
 * the same turn still sees the snapshot it started with (with or without the cache). Run without
 * blocking: this process answers the open gate for the other one's open (open-gate.ts).
 */
async function inOtherProcess(body: string): Promise<void> {
  const { stderr } = await run(process.execPath, ['-e', `
    const { LmdbStore: Store } = require(${JSON.stringify(STORE_MODULE)});
    (async () => { const store = Store.open(${JSON.stringify(temp.dataDir)}); ${body}; await store.close(); })()
      .catch((error) => { console.error(error); process.exit(1); });
  `]);
  if (stderr) process.stderr.write(stderr);
  await new Promise((resolve) => setTimeout(resolve, 5));
}

async function createKey(): Promise<{ accountId: number; keyId: number; digest: string }> {
  const account = await temp.store.accounts.create('owner', 'default', 500);
  assert.notEqual(account, 'exists');
  const accountId = (account as { id: number }).id;
  const secret = generateApiKey();
  const digest = apiKeyDigest(secret).toString('hex');
  const key = await temp.store.keys.create(accountId, { ...KEY_DEFAULTS, name: 'cached' },
    { sealed: seal(loadMasterKey(temp.dataDir, undefined), secret), masked: maskKey(secret), digest }, 10);
  assert.notEqual(key, 'limit');
  return { accountId, keyId: (key as { id: number }).id, digest };
}

test('a key disabled, re-enabled and deleted by another process is seen by the next lookup', async () => {
  const { accountId, keyId, digest } = await createKey();
  const first = temp.store.keys.findByDigest(digest);
  assert.equal(first?.status, 1);
  assert.equal(temp.store.keys.findByDigest(digest), first, 'unchanged bytes: the same decoded record');

  await inOtherProcess(`await store.keys.setStatus(${accountId}, ${keyId}, 2)`);
  assert.equal(temp.store.keys.findByDigest(digest)?.status, 2);

  await inOtherProcess(`await store.keys.setStatus(${accountId}, ${keyId}, 1)`);
  assert.equal(temp.store.keys.findByDigest(digest)?.status, 1);

  await inOtherProcess(`await store.keys.remove(${accountId}, ${keyId})`);
  assert.equal(temp.store.keys.findByDigest(digest), undefined);
  assert.equal(temp.store.keys.findByDigest(apiKeyDigest(generateApiKey()).toString('hex')), undefined, 'an unknown digest');
});

test("an account's balance changed by another process is seen by the next lookup", async () => {
  const { accountId } = await createKey();
  assert.equal(temp.store.accounts.current(accountId)?.balance, 500);
  await inOtherProcess(`await store.accounts.topUp(${accountId}, 250)`);
  assert.equal(temp.store.accounts.current(accountId)?.balance, 750);
  assert.deepEqual(temp.store.accounts.current(accountId), temp.store.accounts.get(accountId));
  assert.equal(temp.store.accounts.current(accountId + 1000), undefined);
});
