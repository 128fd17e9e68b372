// The access log writer: pino-shaped lines, written in batches without a write per line, within
// FLUSH_MS when traffic is light, in order, and bounded when its output does not keep up (lines
// dropped and counted, the count written once the output drains).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, readFileSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { AccessLog, FLUSH_DEADLINE_MS, FLUSH_MS, type CallLine } from '../../src/ops/access-log';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `body` with a temp file open for writing, removed afterwards. */
async function withOutput(body: (out: { path: string; fd: number }) => Promise<void> | void): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-access-'));
  const path = join(dir, 'out.log');
  const fd = openSync(path, 'w', 0o600);
  try {
    await body({ path, fd });
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs `body` with a FIFO whose both ends are non-blocking: the writer sees a full pipe (EAGAIN) instead of hanging. */
async function withFifo(body: (ends: { reader: number; writer: number }) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-access-'));
  const fifo = join(dir, 'pipe');
  execFileSync('mkfifo', ['-m', '0600', fifo]);
  const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
  const writer = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
  try {
    await body({ reader, writer });
  } finally {
    closeSync(writer);
    closeSync(reader);
    rmSync(dir, { recursive: true, force: true });
  }
}

const lines = (path: string) => readFileSync(path, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);

test('a line has pino\'s shape with the fields, and reaches the output within the flush period', () => withOutput(async (out) => {
  const log = new AccessLog({ level: 'info', fd: out.fd, pid: 4242 });
  log.info({ route: '/v1/chat/completions', model: 'gpt "quoted" \u2028 名前', status: 200, ttfb_ms: null, stream: false }, 'call');
  log.info({}, 'request');
  assert.equal(readFileSync(out.path, 'utf8'), '', 'nothing written per line');
  await sleep(FLUSH_MS * 3);
  const [call, bare] = lines(out.path);
  assert.deepEqual(Object.keys(call), ['level', 'time', 'pid', 'log', 'route', 'model', 'status', 'ttfb_ms', 'stream', 'msg']);
  assert.equal(call.level, 30);
  assert.equal(call.pid, 4242);
  assert.equal(call.log, 'access');
  assert.equal(call.model, 'gpt "quoted" \u2028 名前');
  assert.equal(call.ttfb_ms, null);
  assert.equal(call.msg, 'call');
  assert.ok(Math.abs(Number(call.time) - Date.now()) < 5_000);
  assert.deepEqual(Object.keys(bare), ['level', 'time', 'pid', 'log', 'msg']);
}));

test('a call line written field by field is the JSON info() writes for the same fields', () => withOutput(async (out) => {
  const log = new AccessLog({ level: 'info', fd: out.fd, pid: 7 });
  const lines: CallLine[] = [
    { route: '/v1/chat/completions', model: 'gpt-4o', channel: 'main', status: 200, duration_ms: 812, ttfb_ms: 95, prompt_tokens: 1200,
      completion_tokens: 64, quota: 1234, key_id: 3, account_id: 1, stream: true, end_reason: 'completed' },
    { route: '/v1/messages', model: 'claude "sonnet"\n名前', channel: 'a\\b', status: 502, duration_ms: 0, ttfb_ms: null, prompt_tokens: 0,
      completion_tokens: 0, quota: 0, key_id: 9, account_id: 2, stream: false, end_reason: 'failed' },
    // numbers JSON writes its own way, and a route longer than a whole batch
    { route: `/r/${'é\u2028"'.repeat(10_000)}`, model: 'm', channel: '', status: 200, duration_ms: 1.5, ttfb_ms: -3, prompt_tokens: Number.NaN,
      completion_tokens: Number.POSITIVE_INFINITY, quota: 2 ** 53 + 2, key_id: 1e21, account_id: -0, stream: true, end_reason: '' },
  ];
  for (const line of lines) { log.call(line); log.info(line, 'call'); }
  await log.flush();
  const written = readFileSync(out.path, 'utf8').split('\n').filter(Boolean).map((text) => text.replace(/"time":\d+/, '"time":0'));
  assert.equal(written.length, 6);
  assert.equal(written[0], written[1]);
  assert.equal(written[2], written[3]);
  assert.equal(written[4], written[5]);
  assert.deepEqual({ ...JSON.parse(written[2]), time: undefined }, { level: 30, time: undefined, pid: 7, log: 'access', ...lines[1], msg: 'call' });
}));

test('many lines: every one written once, in order; flush() writes what is pending, after the write in flight', () => withOutput(async (out) => {
  const log = new AccessLog({ level: 'info', fd: out.fd });
  for (let index = 0; index < 5_000; index += 1) log.info({ route: '/r', n: index }, 'call');
  await sleep(FLUSH_MS * 3);
  log.info({ n: 5_000 }, 'call');
  await log.flush();
  const written = lines(out.path);
  assert.equal(written.length, 5_001);
  written.forEach((line, index) => assert.equal(line.n, index));
  log.info({ n: 'after close' }, 'call');
  await sleep(FLUSH_MS * 2);
  assert.equal(lines(out.path).length, 5_001, 'no line after flush at shutdown');
}));

test('above info the writer writes nothing', () => withOutput(async (out) => {
  const log = new AccessLog({ level: 'warn', fd: out.fd });
  log.info({ route: '/r' }, 'call');
  await log.flush();
  assert.equal(readFileSync(out.path, 'utf8'), '');
}));

test('an output that does not read: lines past the bound are dropped and counted, the count written once it drains', () => withFifo(async ({ reader, writer }) => {
  const log = new AccessLog({ level: 'info', fd: writer, maxPendingBytes: 256 * 1024 });
  const line = { route: '/v1/chat/completions', model: 'm', filler: 'x'.repeat(200) };
  const started = Date.now();
  for (let index = 0; index < 20_000; index += 1) log.info(line, 'call');   // ~5 MB into a 64 KiB pipe nobody reads
  assert.ok(Date.now() - started < 5_000, 'logging never waits for the output');
  await sleep(FLUSH_MS * 2);
  assert.ok(log.droppedTotal > 10_000, `lines dropped: ${log.droppedTotal}`);
  // the reader drains the pipe; the writer catches up and says how many it dropped
  let text = '';
  const chunk = Buffer.alloc(1 << 16);
  const deadline = Date.now() + 10_000;
  while (!text.includes('"dropped_lines"') && Date.now() < deadline) {
    try {
      const read = readSync(reader, chunk);
      text += chunk.subarray(0, read).toString('utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
      await sleep(20);
    }
    if (!text.includes('"dropped_lines"')) log.info(line, 'call');
  }
  const notice = text.split('\n').find((entry) => entry.includes('"dropped_lines"'));
  assert.ok(notice, 'a line reports the dropped lines');
  const parsed = JSON.parse(notice) as { dropped_lines: number; msg: string };
  assert.ok(parsed.dropped_lines > 10_000);
  assert.match(parsed.msg, /lines dropped/);
  const kept = text.split('\n').filter((entry) => entry.includes('"filler"')).length;
  assert.ok(kept > 0 && kept + parsed.dropped_lines <= 20_000 + 1_000, `kept ${kept}, dropped ${parsed.dropped_lines}`);
}));

test('flush() at shutdown with an output that does not read: it gives up after its deadline, and takes no line after', () => withFifo(async ({ writer }) => {
  const log = new AccessLog({ level: 'info', fd: writer });
  for (let index = 0; index < 2_000; index += 1) log.info({ filler: 'x'.repeat(200), n: index }, 'call');   // ~0.5 MB into a 64 KiB pipe
  const started = Date.now();
  await log.flush();
  const took = Date.now() - started;
  assert.ok(took >= FLUSH_DEADLINE_MS - 50 && took < FLUSH_DEADLINE_MS + 1_000, `flush took ${took} ms`);
  assert.equal(log.flush(), log.flush(), 'one flush, however often it is asked for');
  const before = log.droppedTotal;
  log.info({ n: 'after flush' }, 'call');
  assert.equal(log.droppedTotal, before, 'a line after flush is not taken (nor counted as dropped)');
}));
