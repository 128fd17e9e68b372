// The in-process bench (bench/in-process.ts) measures whole, billed chat calls, or its figure means
// nothing: every call it drives through the dispatcher is answered 200 and leaves its usage record,
// and the key's used_quota and the balance's decrease equal the records' sum.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runInProcess } from '../../bench/in-process';
import { NO_UWS } from '../helpers/gateway';

// the answers are recorded through the fast mock, a uWS server: skipped where uWS does not load (Bun)
test('the in-process bench bills every call it measures: non-stream, streams in one chunk and one event a turn, a model on three channels, an agent\'s request, Claude Code\'s request and streams', { skip: NO_UWS }, async () => {
  const rows = await runInProcess({ seconds: 0.3, rounds: 2, warmupSeconds: 0.2 });
  assert.deepEqual(rows.map((row) => row.scenario), [
    'non-stream', 'stream in one chunk', 'stream, one event per turn', 'non-stream, 3 channels', 'non-stream, agent request', 'messages, Claude Code request',
    'messages stream, one event per turn',
  ]);
  for (const row of rows) {
    assert.ok(row.calls > 0, `${row.scenario}: no call measured`);
    assert.ok(row.billed.calls > row.calls, `${row.scenario}: the warm-up made no call`);
    assert.equal(row.billed.records, row.billed.calls, `${row.scenario}: every call leaves one usage record`);
    // the bench model's price: 0.15 $/M input, 0.6 $/M output; the recorded answers bill a positive quota each
    assert.ok(row.billed.quota >= row.billed.calls, `${row.scenario}: ${row.billed.quota} quota for ${row.billed.calls} calls`);
    assert.equal(row.rounds.length, 2);
    for (const value of [row.mainThread, row.process, ...row.rounds]) assert.ok(Number.isFinite(value) && value > 0, `${row.scenario}: ${value} µs per call`);
  }
});
