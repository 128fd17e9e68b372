// A second writer process for the runtime tests: creates keys straight through the Store while the
// gateway's workers create keys over HTTP. Usage: node store-writer.js DATA_DIR ACCOUNT_ID COUNT
// Prints the created ids as a JSON array.
import { apiKeyDigest, generateApiKey, loadMasterKey, maskKey, seal } from '../../src/auth/secrets';
import { KEY_DEFAULTS } from '../../src/formats/token-fields';
import { LmdbStore as Store } from '../../src/store/lmdb';

async function main(): Promise<void> {
  const [dataDir, accountText, countText] = process.argv.slice(2);
  const store = Store.open(dataDir);
  const masterKey = loadMasterKey(dataDir, process.env.TOLLGATE_SECRET);
  const creations: Promise<unknown>[] = [];
  for (let index = 0; index < Number(countText); index += 1) {
    const key = generateApiKey();
    creations.push(store.keys.create(Number(accountText), { ...KEY_DEFAULTS, name: `direct-${index}` },
      { sealed: seal(masterKey, key), masked: maskKey(key), digest: apiKeyDigest(key).toString('hex') }, 1_000_000));
  }
  const records = await Promise.all(creations);
  await store.close();
  process.stdout.write(`${JSON.stringify(records.map((record) => (record as { id: number }).id))}\n`);
}

main().catch((error: unknown) => { process.stderr.write(`${(error as Error).stack}\n`); process.exit(1); });
