// Issue 21 items 3 and the crash tests: kill -9 of the supervisor of `tollgate serve` with two workers
// and streams in flight, on both fronts; the workers drain. Ends with the money invariants read from the data dir.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { MockUpstream } from '../../scripts/mock-upstream';
import { alive, CALLS, childPids, completed, load, serve, startCrashMock, until } from '../helpers/crash';
import { FRONTS, startSupervisor } from '../helpers/gateway';
import { assertMoneyInvariants } from '../helpers/money';

describe('crash tests: kill -9 of the supervisor under load', () => {
  let mock: MockUpstream;
  before(async () => { mock = await startCrashMock(); });
  after(async () => { await mock?.close(); });

  for (const front of FRONTS) {
    test(`kill -9 of the supervisor (${front} front): the workers drain, every in-flight call finishes and is billed, then they exit`, async () => {
      const { gateway, key, store, before: snapshot } = await serve(mock, front);
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
});
