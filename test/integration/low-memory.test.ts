// `low_memory: true` (issue 17): a worker without its ledger writer thread, one V8 platform thread and
// the low-memory young generation, billing every call exactly as the default deployment does.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { EMBEDDED_CONFIG } from '../../src/config';
import { LmdbStore as Store } from '../../src/store/lmdb';
import { call, cliJson, startSupervisor, tempDir, waitFor, type SupervisedGateway } from '../helpers/gateway';
import { assertMoneyInvariants, moneySnapshot } from '../helpers/money';
import { createKey } from './chat-harness';

const dataDir = tempDir();
let gateway: SupervisedGateway | undefined;
after(async () => {
  await gateway?.stop('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

/** The fields of a /proc stat file after the command name: [state, ppid, …]. */
function statFields(path: string): string[] {
  const stat = readFileSync(path, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

test('low_memory: the worker runs without a writer thread, with one V8 platform thread and 1 MiB semi-spaces, and bills every call exactly', {
  skip: process.platform !== 'linux' && 'the worker\'s threads and command line are read from /proc',
}, async () => {
  const configPath = join(dataDir, 'config.json');
  writeFileSync(configPath, JSON.stringify({ ...EMBEDDED_CONFIG, low_memory: true }));
  gateway = await startSupervisor({ workers: 1, dataDir, configPath });
  const supervisor = gateway.child.pid!;
  let worker = 0;
  await waitFor(async () => {
    const answer = await call(gateway!.url, 'GET', '/healthz');
    worker = answer.status === 200 ? answer.json.pid as number : 0;
    return worker !== 0;
  }, 10_000, 20);
  assert.equal(statFields(`/proc/${worker}/stat`)[1], String(supervisor), 'a worker of this supervisor');
  const argv = readFileSync(`/proc/${worker}/cmdline`, 'utf8').split('\0');
  if (process.versions.bun) {
    // Bun: no V8, so no V8 flags (issue 22); the other low-memory parts below still hold
    assert.ok(!argv.some((arg) => arg.startsWith('--')), argv.join(' '));
  } else {
    assert.ok(argv.includes('--min-semi-space-size=1'), argv.join(' '));
    assert.ok(argv.includes('--v8-pool-size=1'), argv.join(' '));
    assert.ok(argv.includes('--no-concurrent-recompilation'), argv.join(' '));
    assert.ok(argv.includes('--liftoff-only'), argv.join(' '));
  }
  // the writer thread is the one thread a default worker runs at a lower priority than its main
  // thread (LEDGER_WRITER_NICE): here every thread runs at the main thread's
  const niceness = readdirSync(`/proc/${worker}/task`).map((tid) => Number(statFields(`/proc/${worker}/task/${tid}/stat`)[16]));
  assert.deepEqual([...new Set(niceness)], [Number(statFields(`/proc/${worker}/stat`)[16])], `threads of ${worker}: ${niceness.join(',')}`);

  await cliJson(['account', 'topup', '--account', 'admin', '--usd', '10'], dataDir);
  const { id, key } = await createKey(gateway.url, gateway.adminToken(), { remain_quota: 1_000_000 });
  const store = Store.open(dataDir);
  try {
    const before = await moneySnapshot(store);
    for (let index = 0; index < 12; index += 1) {
      const stream = index % 2 === 1;
      const answer = await call(gateway.url, 'POST', '/v1/chat/completions', {
        headers: { authorization: `Bearer ${key}` },
        body: { model: 'sim-gpt-mini', stream, ...(stream ? { stream_options: { include_usage: true } } : {}), messages: [{ role: 'user', content: `call ${index}` }] },
      });
      assert.equal(answer.status, 200, answer.text);
    }
    // SIGTERM drains: the last batch is committed before the worker exits
    assert.equal(await gateway.stop('SIGTERM'), 0);
    gateway = undefined;
    const charged = await assertMoneyInvariants(store, before, 'low_memory');
    assert.ok(charged > 0, 'the calls were billed');
    const used = (await store.keys.byId(id))!.used_quota;
    assert.equal(used, charged, 'the key carries every charge');
  } finally {
    await store.close();
  }
});
