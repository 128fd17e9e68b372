// Issue 21 crash tests: kill -9 of a worker of `tollgate serve`, and of a worker and the supervisor
// together, with streams in flight. Each ends with the money invariants read from the data dir. And
// kill -9 of the only worker with requests arriving around it: none is held. One file per front
// (crash-worker-*.test.ts) runs this suite: a file is one test of the suite's 180 s bound, and the
// six supervisor starts of both fronts did not fit in it on a loaded machine.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { MockUpstream } from '../../scripts/mock-upstream';
import { alive, CALLS, childPids, completed, connectionsOn, HELD_MS, load, probe, serve, startCrashMock, streamCall, until } from '../helpers/crash';
import { FRONTS, NO_UWS, startSupervisor, type Front } from '../helpers/gateway';
import { assertMoneyInvariants } from '../helpers/money';
import { sleep } from '../integration/chat-harness';

export function crashWorkerSuite(front: Front): void {
  // a front this runtime does not serve (uws on Bun) is skipped, with the reason
  void describe(`crash tests: kill -9 of a worker, and of a worker and the supervisor, under load (${front} front)`, { skip: FRONTS.includes(front) ? false : NO_UWS }, () => {
    let mock: MockUpstream;
    before(async () => { mock = await startCrashMock(); });
    after(async () => { await mock?.close(); });

    test(`kill -9 of the only worker (${front} front): requests made around the kill are answered or refused at once, none held; the replacement answers`, async () => {
      const gateway = await startSupervisor({ workers: 1, env: { TOLLGATE_FRONT: front } });
      try {
        const [victim] = childPids(gateway.child.pid!);
        const outcomes: Array<number | 'refused' | 'held'> = [];
        let replacement: number | undefined;
        const deadline = Date.now() + 30_000;
        // four clients, each a new connection per request, from before the kill until the replacement answers
        const clients = Array.from({ length: 4 }, async () => {
          while (replacement === undefined && Date.now() < deadline) {
            const outcome = await probe(gateway.url);
            outcomes.push(outcome);
            if (typeof outcome === 'number' && outcome !== victim) replacement = outcome;
          }
        });
        await sleep(300);
        process.kill(victim, 'SIGKILL');
        await Promise.all(clients);
        assert.ok(outcomes.includes(victim), 'requests reached the worker before the kill');
        assert.equal(outcomes.filter((outcome) => outcome === 'held').length, 0, `requests held ${HELD_MS} ms with no answer, of ${outcomes.length}`);
        assert.ok(replacement !== undefined, 'a replacement answered within 30 s');
        assert.equal(await probe(gateway.url), replacement, 'the next request on a new connection is answered by the replacement');
      } finally {
        await gateway.stop('SIGKILL');
        rmSync(gateway.dataDir, { recursive: true, force: true });
      }
    });

    test(`kill -9 of a worker under load (${front} front): the other worker's calls finish, a replacement serves, leases come back, nothing double-billed`, async () => {
      const { gateway, key, store, before: snapshot } = await serve(mock, front);
      try {
        const [victim] = childPids(gateway.child.pid!);
        const calls = await load(gateway.url, key.key);
        process.kill(victim, 'SIGKILL');
        await Promise.all(calls.map((call) => call.done));
        const finished = calls.filter(completed).length;
        await until(() => childPids(gateway.child.pid!).filter((pid) => pid !== victim).length === 2, 15_000, 'a replacement worker');
        const after = streamCall(gateway.url, key.key);
        await after.done;
        assert.ok(completed(after), 'the gateway serves after the crash');
        assert.equal(await gateway.stop('SIGTERM'), 0);
        const charged = await assertMoneyInvariants(store, snapshot, 'worker killed');
        const records = (await store.usage.list(1, { keyId: key.id }, 0, 100)).items;
        // calls the killed worker had not committed go unbilled; none is billed twice
        assert.ok(records.length >= finished + 1 && records.length <= CALLS + 1, `${records.length} records for ${finished + 1} finished calls`);
        assert.ok(charged > 0);
        assert.equal((await store.keys.byId(key.id))!.leased, 0, 'the dead worker\'s leases were handed back');
        assert.match(gateway.output(), /refunded the leases of a dead worker|worker exited/);
      } finally {
        await store.close();
        await gateway.stop('SIGKILL');
        rmSync(gateway.dataDir, { recursive: true, force: true });
      }
    });

    test(`kill -9 of a worker and of the supervisor under load (${front} front): the surviving worker drains; money exact after the next start`, async () => {
      const { gateway, key, store, before: snapshot } = await serve(mock, front);
      try {
        const workers = childPids(gateway.child.pid!);
        const calls = await load(gateway.url, key.key);
        // which worker took which connection is the kernel's choice: the one serving more survives
        const [victim, survivor] = workers.sort((a, b) => connectionsOn(a, gateway.port) - connectionsOn(b, gateway.port));
        process.kill(victim, 'SIGKILL');
        gateway.child.kill('SIGKILL');
        await Promise.all(calls.map((call) => call.done));
        await until(() => !alive(survivor), 20_000, 'the surviving worker to drain and exit');
        const finished = calls.filter(completed).length;
        assert.ok(finished > 0, 'the surviving worker\'s calls finished');
        const restarted = await startSupervisor({ workers: 1, dataDir: gateway.dataDir, env: { TOLLGATE_FRONT: front } });
        await restarted.stop();
        await assertMoneyInvariants(store, snapshot, 'worker and supervisor killed');
        const records = (await store.usage.list(1, { keyId: key.id }, 0, 100)).items;
        assert.ok(records.length >= finished && records.length <= CALLS, `${records.length} records for ${finished} finished calls`);
        assert.equal((await store.keys.byId(key.id))!.leased, 0, 'every lease returned');
      } finally {
        await store.close();
        await gateway.stop('SIGKILL');
        rmSync(gateway.dataDir, { recursive: true, force: true });
      }
    });
  });
}
