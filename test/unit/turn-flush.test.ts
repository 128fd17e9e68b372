// flushAtTurnEnd (src/relay/turn-flush.ts): every holder queued in a turn is flushed once, in order,
// at the end of that turn (after the turn's microtasks and I/O callbacks); one that throws does not
// keep the others from theirs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { flushAtTurnEnd, type TurnFlushable } from '../../src/relay/turn-flush';

function holder(name: string, log: string[], onFlush?: () => void): TurnFlushable {
  return { flushQueued: false, flush: () => { log.push(name); onFlush?.(); } };
}

test('holders queued in one turn are flushed once each, in order, after the turn and not before', async () => {
  const log: string[] = [];
  const first = holder('first', log);
  const second = holder('second', log);
  flushAtTurnEnd(first);
  flushAtTurnEnd(second);
  flushAtTurnEnd(first);
  assert.deepEqual(log, [], 'nothing is flushed inside the turn');
  await Promise.resolve();
  assert.deepEqual(log, [], 'nor by the turn\'s microtasks');
  await nextTurn();
  assert.deepEqual(log, ['first', 'second']);
  assert.equal(first.flushQueued, false);
  // queued again in a later turn: flushed again
  flushAtTurnEnd(second);
  await nextTurn();
  assert.deepEqual(log, ['first', 'second', 'second']);
});

test('a holder queued by another one\'s flush is flushed in the same pass', async () => {
  const log: string[] = [];
  const late = holder('late', log);
  const early = holder('early', log, () => flushAtTurnEnd(late));
  flushAtTurnEnd(early);
  await nextTurn();
  assert.deepEqual(log, ['early', 'late']);
});

test('a flush that throws does not keep the others from theirs; its error is thrown after them, and queueing works after it', () => {
  // in a child process: the error surfaces as an uncaught exception, which the test runner would take for this test's
  const script = `
    const { flushAtTurnEnd } = require(${JSON.stringify(require.resolve('../../src/relay/turn-flush'))});
    const log = [];
    const holder = (name, fail) => ({ flushQueued: false, flush: () => { log.push(name); if (fail) throw new Error('write failed: ' + name); } });
    process.on('uncaughtException', (error) => log.push('thrown ' + error.message));
    flushAtTurnEnd(holder('a')); flushAtTurnEnd(holder('failing', true)); flushAtTurnEnd(holder('b'));
    setImmediate(() => {
      flushAtTurnEnd(holder('again'));
      setImmediate(() => process.stdout.write(JSON.stringify(log)));
    });`;
  const output = execFileSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20_000 });
  assert.deepEqual(JSON.parse(output), ['a', 'failing', 'b', 'thrown write failed: failing', 'again']);
});

test('holders queued by I/O callbacks of one turn are flushed together, after every callback of the turn', async () => {
  // two sockets' reads in one poll phase: each callback queues its holder; neither flush runs between them
  const { createServer, connect } = await import('node:net');
  const log: string[] = [];
  const server = createServer((socket) => socket.on('data', () => {
    log.push('read');
    flushAtTurnEnd(holder('flush', log));
  }));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const clients = await Promise.all([0, 1].map(() => new Promise<import('node:net').Socket>((resolve) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
  })));
  // both writes reach the server before its loop wakes: one blocking pause of the server's own thread
  await new Promise((resolve) => setTimeout(resolve, 50));
  clients[0].write('a');
  clients[1].write('b');
  const until = Date.now() + 20;
  while (Date.now() < until) { /* the bytes arrive while the loop is busy */ }
  await new Promise((resolve) => setTimeout(resolve, 50));
  for (const socket of clients) socket.destroy();
  server.close();
  assert.deepEqual(log, ['read', 'read', 'flush', 'flush']);
});
