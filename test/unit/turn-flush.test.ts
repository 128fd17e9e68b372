// flushAtTurnEnd (src/relay/turn-flush.ts): every holder queued in a turn is flushed once, in order,
// at the end of that turn; one that throws does not keep the others from theirs.
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
  await Promise.resolve();
  assert.deepEqual(log, ['early', 'late']);
});

test('a flush that throws does not keep the others from theirs; its error is thrown after them, and queueing works after it', () => {
  // in a child process: the error surfaces as an unhandled rejection, which the test runner would take for this test's
  const script = `
    const { flushAtTurnEnd } = require(${JSON.stringify(require.resolve('../../src/relay/turn-flush'))});
    const log = [];
    const holder = (name, fail) => ({ flushQueued: false, flush: () => { log.push(name); if (fail) throw new Error('write failed: ' + name); } });
    process.on('unhandledRejection', (error) => log.push('thrown ' + error.message));
    flushAtTurnEnd(holder('a')); flushAtTurnEnd(holder('failing', true)); flushAtTurnEnd(holder('b'));
    setImmediate(() => {
      flushAtTurnEnd(holder('again'));
      setImmediate(() => process.stdout.write(JSON.stringify(log)));
    });`;
  const output = execFileSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20_000 });
  assert.deepEqual(JSON.parse(output), ['a', 'failing', 'b', 'thrown write failed: failing', 'again']);
});
