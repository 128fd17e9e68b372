// A second writer process for the runtime tests: creates keys straight through the Store while the
// gateway's workers create keys over HTTP. Usage: node store-writer.js DATA_DIR ACCOUNT_ID COUNT [OPENS]
// Without OPENS, the COUNT creations are started at once on one open store. With OPENS, the store is
// opened OPENS times (closed in between) and the keys are created one at a time, each its own
// commit, COUNT / OPENS on each open: many opens of this process fall among other processes' commits.
// Prints the created ids as a JSON array.
import { apiKeyDigest, generateApiKey, loadMasterKey, maskKey, seal } from '../../src/auth/secrets';
import { KEY_DEFAULTS } from '../../src/formats/token-fields';
import { LmdbStore as Store } from '../../src/store/lmdb';

function create(store: Store, masterKey: Buffer, accountId: number, index: number): Promise<unknown> {
  const key = generateApiKey();
  return store.keys.create(accountId, { ...KEY_DEFAULTS, name: `direct-${index}` },
    { sealed: seal(masterKey, key), masked: maskKey(key), digest: apiKeyDigest(key).toString('hex') }, 1_000_000);
}

async function main(): Promise<void> {
  const [dataDir, accountText, countText, opensText] = process.argv.slice(2);
  const accountId = Number(accountText);
  const count = Number(countText);
  const records: unknown[] = [];
  if (opensText === undefined) {
    const store = Store.open(dataDir);
    const masterKey = loadMasterKey(dataDir, process.env.TOLLGATE_SECRET);
    records.push(...await Promise.all(Array.from({ length: count }, (_, index) => create(store, masterKey, accountId, index))));
    await store.close();
  } else {
    const opens = Number(opensText);
    for (let open = 0; open < opens; open += 1) {
      const store = Store.open(dataDir);
      const masterKey = loadMasterKey(dataDir, process.env.TOLLGATE_SECRET);
      const until = Math.round((count * (open + 1)) / opens);
      while (records.length < until) records.push(await create(store, masterKey, accountId, records.length));
      await store.close();
    }
  }
  process.stdout.write(`${JSON.stringify(records.map((record) => (record as { id: number }).id))}\n`);
}

main().catch((error: unknown) => { process.stderr.write(`${(error as Error).stack}\n`); process.exit(1); });
