// Issue 21 item 8: a worker frozen for real (SIGSTOP) is detected by the supervisor's watchdog, logged,
// killed and replaced after its leases are handed back. Ends with the money invariants.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { MockUpstream } from '../../scripts/mock-upstream';
import { alive, childPids, completed, HELD_MS, probe, serve, startCrashMock, streamCall, until } from '../helpers/crash';
import { FRONTS } from '../helpers/gateway';
import { assertMoneyInvariants } from '../helpers/money';

for (const front of FRONTS) describe(`watchdog: a frozen worker is replaced (${front} front)`, () => {
  let mock: MockUpstream;
  before(async () => { mock = await startCrashMock(); });
  after(async () => { await mock?.close(); });

  test(`watchdog (${front} front): a worker frozen with SIGSTOP is logged, killed and replaced, its leases handed back first`, async () => {
    const { gateway, key, store, before: snapshot } = await serve(mock, front, { watchdog_ms: 3000 });
    try {
      // calls on fresh connections reach both workers: each takes a lease on the key
      await until(async () => {
        const calls = Array.from({ length: 6 }, () => streamCall(gateway.url, key.key));
        await Promise.all(calls.map((call) => call.done));
        return Object.keys((await store.keys.byId(key.id))!.leases).length === 2;
      }, 20_000, 'both workers to hold a lease');
      const [frozen] = childPids(gateway.child.pid!);
      process.kill(frozen, 'SIGSTOP');
      const stoppedAt = Date.now();
      // requests on new connections while the worker is frozen: the other worker answers them (none
      // may wait on the frozen one, nor stay open after it is killed)
      const duringFreeze = Promise.all(Array.from({ length: 6 }, () => probe(gateway.url)));
      await until(() => !alive(frozen), 20_000, 'the watchdog to kill the frozen worker');
      // pinged every 750 ms (3000 / 4): the last answer can come up to one interval before the freeze
      const frozenFor = Date.now() - stoppedAt;
      assert.ok(frozenFor >= 3000 - 750 - 500, `killed ${frozenFor} ms into the freeze: not before the bound`);
      const outcomes = await duringFreeze;
      assert.equal(outcomes.filter((outcome) => outcome === 'held').length, 0, `requests made during the freeze held ${HELD_MS} ms: ${outcomes.join(', ')}`);
      const line = gateway.output().split('\n').find((text) => text.includes('worker event loop unresponsive'));
      assert.ok(line, gateway.output().slice(-2000));
      const logged = JSON.parse(line) as { pid: number; worker: string; watchdog_ms: number };
      assert.equal(logged.pid, frozen);
      assert.equal(logged.watchdog_ms, 3000);
      await until(() => childPids(gateway.child.pid!).length === 2, 15_000, 'a replacement worker');
      await until(async () => !(logged.worker in (await store.keys.byId(key.id))!.leases), 5000, 'the frozen worker\'s lease handed back');
      await until(async () => {
        const after = streamCall(gateway.url, key.key);
        await after.done;
        return completed(after);
      }, 20_000, 'a call served after the replacement');
      assert.equal(await gateway.stop('SIGTERM'), 0);
      await assertMoneyInvariants(store, snapshot, 'watchdog');
    } finally {
      await store.close();
      await gateway.stop('SIGKILL');
      rmSync(gateway.dataDir, { recursive: true, force: true });
    }
  });
});
