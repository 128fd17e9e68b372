// The benchmark's throughput checks: Tollgate ÷ pass-through per core of CPU used, so a baseline held
// back by the load generator's core does not make the ratio look better than it is.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { evaluateTargets, type TargetRun } from '../../bench/report';
import type { LoadResult } from '../../bench/load';

function load(requestsPerSecond: number, serverCpuPercent: number | null, extra: Partial<LoadResult> = {}): LoadResult {
  const latencyMs = { p50: 1, p90: 1, p99: 1, mean: 1, max: 1, count: 1 };
  return {
    connections: 50, durationSeconds: 8, ok: requestsPerSecond * 8, requestsPerSecond, latencyMs, non2xx: 0, errors: 0, timeouts: 0,
    bytesPerSecond: 0, serverCpuPercent, clientCpuPercent: 30, ...extra,
  };
}

function run(id: TargetRun['id'], chat: LoadResult, stream: LoadResult): TargetRun {
  return { id, label: id, url: 'http://127.0.0.1:1', scenarios: { 'chat-50': chat, 'stream-50': stream }, memory: [] };
}

function throughputChecks(passthrough: [LoadResult, LoadResult], tollgate: [LoadResult, LoadResult]) {
  const { checks, notes } = evaluateTargets([
    run('mock', load(26_000, 60), load(20_000, 60)),
    run('passthrough', ...passthrough),
    run('tollgate', ...tollgate),
  ]);
  return { chat: checks.find((check) => check.name.startsWith('non-stream throughput'))!, stream: checks.find((check) => check.name.startsWith('stream throughput'))!, notes };
}

test('a pass-through below its core is compared per core: the raw req/s ratio would pass, the per-core one does not', () => {
  // raw 19,400 ÷ 22,900 = 84.7%; per core 20,208 ÷ 28,272 = 71.5%
  const { chat, notes } = throughputChecks([load(22_900, 81), load(15_700, 75)], [load(19_400, 96), load(13_400, 99)]);
  assert.equal(chat.pass, false);
  assert.match(chat.measured, /^71\.5% per core/);
  assert.match(chat.measured, /raw 19,400 ÷ 22,900 req\/s = 84\.7%/);
  assert.ok(notes.some((note) => note.includes('pass-through used only 81% of its core')));
});

test('both targets on a full core: per core and raw agree, and a ratio over the target passes', () => {
  const { chat, stream } = throughputChecks([load(20_000, 100), load(15_000, 100)], [load(17_000, 100), load(12_000, 100)]);
  assert.equal(chat.pass, true);
  assert.match(chat.measured, /^85\.0% per core/);
  assert.equal(stream.pass, true);
  assert.match(stream.measured, /^80\.0% per core/);
});

test('without CPU figures the raw ratio is used, and errors fail the check whatever the ratio', () => {
  const { chat, stream } = throughputChecks([load(20_000, null), load(15_000, null)], [load(19_000, null, { errors: 3 }), load(14_000, null)]);
  assert.equal(chat.measured, '95.0% (19,000 ÷ 20,000 req/s)');
  assert.equal(chat.pass, false);
  assert.equal(stream.pass, true);
});

test('first byte: the added p50 is checked; the p99s are shown side by side, not subtracted (the mock\'s own p99 is noisy)', () => {
  const firstByte = (p50: number, p99: number, bad = 0) => ({ p50, p90: p50, p99, mean: p50, max: p99, count: 2000, bad });
  const targets = (tollgateBad: number) => {
    const mock = run('mock', load(26_000, 60), load(20_000, 60));
    const baseline = run('passthrough', load(20_000, 100), load(15_000, 100));
    const tollgate = run('tollgate', load(17_000, 100), load(12_000, 100));
    mock.firstByte = firstByte(0.05, 2.6);
    baseline.firstByte = firstByte(0.3, 1.9);
    tollgate.firstByte = firstByte(0.35, 2.2, tollgateBad);
    return evaluateTargets([mock, baseline, tollgate]).checks.find((check) => check.name.startsWith('stream: added time to first byte'))!;
  };
  const check = targets(0);
  assert.equal(check.measured, '0.300 ms (p99: Tollgate 2.200 ms, mock 2.600 ms)');
  assert.equal(check.pass, true);
  assert.equal(targets(1).pass, false, 'a bad answer fails the check whatever the latency');
});

test('with alternated rounds the check is their median ratio per core, shown with their range and the single pass; an error in a round fails it', () => {
  const targets = [
    run('mock', load(26_000, 60), load(20_000, 60)),
    run('passthrough', load(20_000, 100), load(15_000, 100)),
    run('tollgate', load(17_000, 100), load(12_000, 100)),   // single pass: 85% and 80%, both over their targets
  ];
  // per core: 40,000 ÷ 50,000 = 80% … the median of 70%, 75%, 79% is 75%
  const rounds = (ratios: number[], tollgateExtra: Partial<LoadResult> = {}) => ratios.map((ratio) => ({
    passthrough: load(25_000, 50), tollgate: load(50_000 * ratio * 0.5, 50, tollgateExtra),
  }));
  const evaluated = (alternated: Parameters<typeof evaluateTargets>[1]) => {
    const { checks } = evaluateTargets(targets, alternated);
    return { chat: checks.find((check) => check.name.startsWith('non-stream throughput'))!, stream: checks.find((check) => check.name.startsWith('stream throughput'))! };
  };
  const { chat, stream } = evaluated([{ scenario: 'chat-50', rounds: rounds([0.79, 0.7, 0.75]) }]);
  assert.equal(chat.pass, false, 'the single pass would pass; the median of the rounds does not');
  assert.match(chat.measured, /^75\.0% per core, median of 3 alternated rounds \(70\.0%–79\.0%\); single pass 85\.0% per core/);
  assert.equal(stream.pass, true, 'a scenario without rounds keeps its single pass');
  assert.match(stream.measured, /^80\.0% per core \(/);

  assert.equal(evaluated([{ scenario: 'chat-50', rounds: rounds([0.9, 0.85, 0.82, 0.88]) }]).chat.pass, true);
  assert.match(evaluated([{ scenario: 'chat-50', rounds: rounds([0.9, 0.85, 0.82, 0.88]) }]).chat.measured, /^86\.5% per core, median of 4/);
  assert.equal(evaluated([{ scenario: 'chat-50', rounds: rounds([0.9, 0.85, 0.82], { non2xx: 1 }) }]).chat.pass, false, 'a non-2xx answer in a round fails the check');
});
