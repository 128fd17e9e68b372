// A process for the open-gate tests (test/unit/lmdb-open-gate.test.ts), in one of these roles:
//   holder DATA_DIR: opens the store as a serving process (the gate's holder), says "ready", and
//     keeps it open until its stdin ends; polling-holder: the same, polling for requests instead of
//     watching the gate dir's change events; member: the same, not serving (a member of the gate only);
//   writer DATA_DIR COUNT: opens the store, says "open", waits for "go" on stdin, creates COUNT keys
//     for account 1, 25 at a time, and prints their ids as a JSON array;
//   opener DATA_DIR: opens the store and closes it again, as a CLI command does.
import { loadMasterKey, maskKey, seal } from '../../src/auth/secrets';
import { KEY_DEFAULTS } from '../../src/formats/token-fields';
import { LmdbStore } from '../../src/store/lmdb';

const AT_ONCE = 25;

function stdinLine(): Promise<void> {
  return new Promise((resolve) => {
    process.stdin.on('data', () => resolve());
    process.stdin.on('end', () => resolve());
  });
}

async function main(): Promise<void> {
  const [role, dataDir, countText] = process.argv.slice(2);
  if (role === 'opener') { await LmdbStore.open(dataDir).close(); return; }
  if (role === 'holder' || role === 'polling-holder' || role === 'member') {
    const store = LmdbStore.open(dataDir, { serves: role !== 'member', gateChangeEvents: role !== 'polling-holder' });
    process.stderr.write('ready\n');
    await new Promise((resolve) => { process.stdin.on('end', resolve); process.stdin.resume(); });
    await store.close();
    return;
  }
  const store = LmdbStore.open(dataDir);
  process.stderr.write('open\n');
  await stdinLine();
  const secret = { sealed: seal(loadMasterKey(dataDir, 'open-gate-test'), 'sk-open-gate'), masked: maskKey('sk-open-gate') };
  const ids: number[] = [];
  for (let done = 0; done < Number(countText); done += AT_ONCE) {
    const batch = Array.from({ length: AT_ONCE }, (_, index) => store.keys.create(1, { ...KEY_DEFAULTS, name: `k${done + index}` },
      { ...secret, digest: `d${done + index}` }, 1_000_000));
    for (const record of await Promise.all(batch)) if (record !== 'limit') ids.push(record.id);
  }
  await store.close();
  process.stdout.write(JSON.stringify(ids));
}

main().catch((error: unknown) => { process.stderr.write(`${(error as Error).stack}\n`); process.exit(1); });
