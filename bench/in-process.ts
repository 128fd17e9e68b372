// The gateway's own work per model call, without a network: a real gateway (LMDB in a temp dir,
// ledger, access log, metrics) whose model calls come through its dispatcher from an in-memory
// Exchange, and whose upstreams answer with the fast mock's recorded bytes on a later turn: chat
// through the OpenAI provider's call replaced, messages through the Anthropic provider whole on a
// recorded undici dispatcher.
// What is left out is what the pass-through does too (uWS, undici, the kernel), so this isolates
// Tollgate's own JavaScript above its front, and on a noisy machine its rounds mostly agree within
// 5-10% where the load scenarios' spread by tens of percent: a change of ~1 µs shows here. It runs
// hot (the same calls over and over); under load the same work costs more (bench/README.md).
// `npm run bench -- --in-process [--round-seconds S] [--rounds N]`.
import { spawnSync } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config';
import type { Exchange, Headers } from '../src/http';
import { createLogger } from '../src/log';
import { startGateway } from '../src/main';
import { workerV8Flags } from '../src/supervisor';
import { AccessLog } from '../src/ops/access-log';
import type { UpstreamAnswer } from '../src/providers/types';
import { createDispatcher } from '../src/routes';
import type { BodySource } from '../src/upstream/upstream-call';
import type { Dispatcher } from '../src/upstream/undici';
import type { UpstreamPools } from '../src/upstream/pools';
import { anthropicProvider } from '../src/providers/anthropic';
import { startFastMock, type FastMock } from './fast-mock';
import { agentChatBody, BENCH_MESSAGES_MODEL, chatBody, claudeCodeMessagesBody, messagesBody } from './load';
import { choosePlacement, statCpuSeconds } from './processes';
import { describeMachine, median, RESULTS_DIR } from './report';
import { BENCH_MODEL } from './targets';

/** calls dispatched together, as the load scenarios' 50 connections keep 50 in flight */
const CONCURRENT = 50;

interface Scenario {
  name: string;
  stream: boolean;
  /** the model's channels (name, priority, weight): one, or a failover setup */
  channels: Array<{ name: string; priority?: number; weight?: number }>;
  /** the request body (default: the load scenarios' short chat request) */
  body?: (model: string, stream: boolean) => string;
  /**
   * `messages`: /v1/messages to an `anthropic` channel whose provider code runs whole (request
   * bytes, headers, the answer read back), only undici's pool replaced by one that answers the fast
   * mock's recorded message on a later turn
   */
  route?: 'messages';
  /** a stream's events one per turn of the event loop, each its own chunk, as models send them (default: the whole stream as one chunk) */
  perTurn?: boolean;
}

const ONE_CHANNEL = [{ name: 'mock' }];
const SCENARIOS: readonly Scenario[] = [
  { name: 'non-stream', stream: false, channels: ONE_CHANNEL },
  { name: 'stream in one chunk', stream: true, channels: ONE_CHANNEL },
  // the per-event path: the recorded stream's 24 events, each its own chunk on its own turn
  { name: 'stream, one event per turn', stream: true, channels: ONE_CHANNEL, perTurn: true },
  // a model served by two weighted channels and a fallback: the failover order is drawn on every call
  { name: 'non-stream, 3 channels', stream: false, channels: [{ name: 'primary-a', priority: 10, weight: 3 }, { name: 'primary-b', priority: 10, weight: 1 }, { name: 'fallback', priority: 0 }] },
  // what a coding agent sends: tools, a long history, Chinese text (bench/load.ts agentChatBody)
  { name: 'non-stream, agent request', stream: false, channels: ONE_CHANNEL, body: agentChatBody },
  // Claude Code's route and request (bench/load.ts claudeCodeMessagesBody)
  { name: 'messages, Claude Code request', stream: false, channels: ONE_CHANNEL, body: claudeCodeMessagesBody, route: 'messages' },
  // Claude Code's streams: the recorded Anthropic stream's 26 events, each its own chunk on its own turn
  { name: 'messages stream, one event per turn', stream: true, channels: ONE_CHANNEL, body: messagesBody, route: 'messages', perTurn: true },
];

/**
 * An undici dispatcher that answers every request with one recorded answer on a later turn, as a
 * pool does: the handler gets the connection, the head, the body and the end. A string body is
 * encoded to bytes as undici encodes it to write it. With `events`, the body comes one event a
 * turn, each its own chunk.
 */
function recordedDispatcher(answer: { contentType: string; bytes: Buffer; events?: Buffer[] }): Dispatcher {
  const head = [Buffer.from('content-type'), Buffer.from(answer.contentType)];
  const dispatch = (options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean => {
    if (typeof options.body === 'string') Buffer.from(options.body);
    setImmediate(() => {
      handler.onConnect?.(() => undefined);
      handler.onHeaders?.(200, head, () => undefined, 'OK');
      if (answer.events === undefined) {
        handler.onData?.(answer.bytes);
        handler.onComplete?.([]);
        return;
      }
      onePerTurn(answer.events, (event) => handler.onData?.(event), () => handler.onComplete?.([]));
    });
    return true;
  };
  return { dispatch } as unknown as Dispatcher;
}

/** Hands `events` to `onEvent` one a turn, from the next turn on, then calls `onEnd` a turn later. */
function onePerTurn(events: Buffer[], onEvent: (event: Buffer) => void, onEnd: () => void): void {
  let next = 0;
  const send = () => {
    if (next === events.length) { onEnd(); return; }
    onEvent(events[next]);
    next += 1;
    setImmediate(send);
  };
  setImmediate(send);
}

/** An answer's bytes as the upstream call hands them over: data, then end, on a later turn. */
class RecordedBody extends EventEmitter implements BodySource {
  pause(): void { /* nothing to pause: the bytes are in memory */ }
  resume(): void { /* idem */ }
  destroy(): void { this.removeAllListeners(); }
}

/** The front's side of one call, in memory: the request's headers and body, the answer counted. */
class MemoryExchange implements Exchange {
  readonly method = 'POST';
  readonly remoteAddress = '127.0.0.1';
  bodyLimit = 0;
  aborted = false;
  finished = false;
  status = 0;
  model = '';
  answered = 0;

  constructor(readonly path: string, private readonly headers: Headers, private readonly raw: Buffer, private readonly done: (exchange: MemoryExchange) => void) {}

  get query(): URLSearchParams { return new URLSearchParams(); }
  header(name: string): string | undefined { return this.headers[name]; }
  body(): Promise<Buffer> { return Promise.resolve(this.raw); }
  onAbort(): void { /* the client never leaves */ }
  respond(status: number, _headers: Headers, body: string | Buffer): void {
    this.status = status;
    this.answered += Buffer.byteLength(body);
    this.finish();
  }
  startStream(status: number): void { this.status = status; }
  write(chunk: string | Buffer): boolean { this.answered += Buffer.byteLength(chunk); return true; }
  onWritable(listener: () => void): void { listener(); }
  end(...chunks: Array<string | Buffer>): void {
    for (const chunk of chunks) this.answered += Buffer.byteLength(chunk);
    this.finish();
  }
  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.done(this);
  }
}

export interface InProcessRow {
  scenario: string;
  /** median µs per call of the main thread (the gateway's JavaScript) and of the whole process (its threads too) */
  mainThread: number;
  process: number;
  rounds: number[];
  /** calls measured (the rounds) */
  calls: number;
  /** every call made, warm-up included, and the usage records and quota the store holds for them */
  billed: { calls: number; records: number; quota: number };
}

export interface InProcessOptions {
  /** seconds per round (default 2) */
  seconds?: number;
  /** rounds per scenario (default 7) */
  rounds?: number;
  /** seconds of calls before the rounds (default 2) */
  warmupSeconds?: number;
}

/** CPU seconds of the calling thread (the main thread: all JavaScript runs there). */
const threadCpuSeconds = () => statCpuSeconds('/proc/thread-self/stat');

/**
 * One scenario on a fresh gateway: its usage rows grow the store by ~300 bytes a call, and a store
 * grown by millions of calls costs page faults that would count against the next scenario.
 */
async function runScenario(scenario: Scenario, options: Required<InProcessOptions>, answers: FastMock['answers']): Promise<Omit<InProcessRow, 'scenario'>> {
  const { stream } = scenario;
  const messages = scenario.route === 'messages';
  const model = messages ? BENCH_MESSAGES_MODEL : BENCH_MODEL;
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-in-process-'));
  const config = loadConfig({
    raw: {
      listen: { host: '127.0.0.1', port: 0 }, workers: 1, dataDir, groups: { default: { ratio: 1 } },
      models: [{ id: model, price: { input: 0.15, output: 0.6 } }],
      // never dialled: the provider's chat call, or for messages undici's pool, is replaced below
      channels: scenario.channels.map((channel) => ({ ...channel, type: messages ? 'anthropic' : 'openai', base_url: 'http://127.0.0.1:9', keys: ['k'], models: [model] })),
    },
    env: { TOLLGATE_DATA_DIR: dataDir, TOLLGATE_FRONT: 'node' },
  });
  // the access lines go to a file, as the gateway's go to its stdout
  const accessFd = openSync(join(dataDir, 'access.log'), 'a', 0o600);
  const accessOutput = new AccessLog({ level: 'info', fd: accessFd });
  const gateway = await startGateway(config, { log: createLogger('error'), accessLog: accessOutput });
  try {
    const { context } = gateway;
    const adminToken = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
    const base = `http://127.0.0.1:${gateway.port}`;
    const post = async (path: string, body: unknown) => {
      const response = await fetch(base + path, { method: 'POST', headers: { authorization: adminToken, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const parsed = await response.json() as { data?: Record<string, unknown> };
      if (!response.ok || !parsed.data) throw new Error(`POST ${path} answered ${response.status}`);
      return parsed.data;
    };
    const token = await post('/api/token/', { name: 'in-process', unlimited_quota: true });
    const key = String((await post(`/api/token/${String(token.id)}/key`, {})).key);
    const admin = await context.store.accounts.find('admin');
    const toppedUp = admin === undefined ? undefined : await context.store.accounts.topUp(admin.id, 1e15);
    if (admin === undefined || typeof toppedUp !== 'object') throw new Error('the admin account could not be topped up');

    const provider = context.providers.get('openai')!;
    // the anthropic provider as the gateway makes it, on a pool set that hands out the recorded dispatcher
    const recorded = recordedDispatcher(stream ? { ...answers.messages.stream, events: scenario.perTurn ? answers.messages.stream.events : undefined } : answers.messages.plain);
    const pools = { get: () => recorded } as unknown as UpstreamPools;
    context.providers.set('anthropic', anthropicProvider({ pools, pool: context.pool, offloadThresholdBytes: config.offloadThresholdBytes }));
    // the answer comes on a later turn, as a real upstream's does: calls overlap as under load
    provider.chatCompletions = () => new Promise<UpstreamAnswer>((resolve) => setImmediate(() => {
      const body = new RecordedBody();
      if (!stream) { resolve({ status: 200, contentType: answers.plain.contentType, body, bytes: answers.plain.bytes }); return; }
      resolve({ status: 200, contentType: answers.stream.contentType, body });
      if (scenario.perTurn) onePerTurn(answers.stream.events, (event) => body.emit('data', event), () => body.emit('end'));
      else setImmediate(() => { body.emit('data', answers.stream.bytes); body.emit('end'); });
    }));
    const dispatch = createDispatcher(context);
    const raw = Buffer.from((scenario.body ?? chatBody)(model, stream));
    const path = messages ? '/v1/messages' : '/v1/chat/completions';
    const headers: Headers = { host: '127.0.0.1', authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': String(raw.length) };
    /** keeps CONCURRENT calls in flight (a new one starts as one ends) for `milliseconds` */
    const measure = (milliseconds: number) => new Promise<{ mainThread: number; process: number; calls: number }>((resolve, reject) => {
      const thread = threadCpuSeconds();
      const whole = process.cpuUsage();
      const until = Date.now() + milliseconds;
      let calls = 0;
      let inFlight = 0;
      let failed = false;
      const start = () => {
        inFlight += 1;
        dispatch(new MemoryExchange(path, headers, raw, ended));
      };
      const ended = (exchange: MemoryExchange) => {
        inFlight -= 1;
        calls += 1;
        if (exchange.status !== 200 || exchange.answered === 0) {
          if (!failed) reject(new Error(`a call answered ${exchange.status}`));
          failed = true;
        }
        if (failed) return;
        if (Date.now() < until) { start(); return; }
        if (inFlight > 0) return;
        const used = process.cpuUsage(whole);
        resolve({ mainThread: (threadCpuSeconds() - thread) * 1e6 / calls, process: (used.user + used.system) / calls, calls });
      };
      for (let index = 0; index < CONCURRENT; index += 1) start();
    });
    let made = (await measure(options.warmupSeconds * 1000)).calls;
    const rounds: Array<{ mainThread: number; process: number }> = [];
    let calls = 0;
    for (let round = 0; round < options.rounds; round += 1) {
      const result = await measure(options.seconds * 1000);
      rounds.push(result);
      calls += result.calls;
    }
    made += calls;
    // The figure is for whole, billed calls: every call left its usage record, and the money adds up.
    // A stream's answer ends before its call is settled (the bill follows the end): wait for the last.
    while (context.ops.metrics.inFlight > 0) await new Promise((resolve) => setImmediate(resolve));
    await context.ledger.flush();
    const billed = await context.store.usage.sumForKey(admin.id, Number(token.id));
    const account = await context.store.accounts.get(admin.id);
    const keyAfter = await context.store.keys.get(admin.id, Number(token.id));
    const decrease = toppedUp.balance - (account?.balance ?? Number.NaN);
    if (billed.count !== made || billed.quota <= 0 || keyAfter?.used_quota !== billed.quota || decrease !== billed.quota) {
      throw new Error(`${made} calls made, but ${billed.count} usage records of ${billed.quota} quota, key used_quota ${keyAfter?.used_quota}, balance down ${decrease}`);
    }
    return {
      mainThread: median(rounds.map((round) => round.mainThread)), process: median(rounds.map((round) => round.process)),
      rounds: rounds.map((round) => round.mainThread), calls, billed: { calls: made, records: billed.count, quota: billed.quota },
    };
  } finally {
    await gateway.shutdown(1000);
    await accessOutput.flush();
    closeSync(accessFd);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function runInProcess(options: InProcessOptions = {}): Promise<InProcessRow[]> {
  const settings: Required<InProcessOptions> = { seconds: options.seconds ?? 2, rounds: options.rounds ?? 7, warmupSeconds: options.warmupSeconds ?? 2 };
  const mock = await startFastMock({ model: BENCH_MODEL });
  const answers = mock.answers;
  mock.close();
  const rows: InProcessRow[] = [];
  for (const scenario of SCENARIOS) rows.push({ scenario: scenario.name, ...await runScenario(scenario, settings, answers) });
  return rows;
}

export function renderInProcess(rows: InProcessRow[]): string {
  const machine = describeMachine();
  const lines = [
    '# Tollgate in process: the gateway\'s own work per model call', '',
    `- Run: ${new Date().toISOString()}, commit ${machine.commit}`,
    `- Machine: ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}`,
    '- Command: `npm run bench -- --in-process` (the worker\'s V8 flags; CPU per call from /proc and process.cpuUsage: the main thread, and the whole process with its threads; medians of the rounds)', '',
    '| scenario | main thread, µs per call | whole process | main thread, each round | calls measured | calls billed (warm-up included) |', '|---|---:|---:|---|---:|---:|',
  ];
  for (const row of rows) {
    lines.push(`| ${row.scenario} | ${row.mainThread.toFixed(2)} | ${row.process.toFixed(2)} | ${row.rounds.map((value) => value.toFixed(2)).join(', ')} | ${row.calls.toLocaleString('en-US')} | ${row.billed.records.toLocaleString('en-US')} of ${row.billed.calls.toLocaleString('en-US')}, ${row.billed.quota.toLocaleString('en-US')} quota |`);
  }
  return lines.join('\n');
}

/**
 * Runs this file in a child with the V8 flags a worker gets (without them V8's allocation-site
 * pretenuring moves the streams' short-lived objects to the old generation, and the figure measures
 * mark-compacts a worker never does), on the gateway's cores when taskset is there.
 */
export function runInProcessChild(options: { seconds: number; rounds: number; gatewayCpus?: string }): void {
  const placement = choosePlacement({ gatewayCpus: options.gatewayCpus });
  const node = [process.execPath, ...workerV8Flags(), __filename, '--seconds', String(options.seconds), '--rounds', String(options.rounds)];
  const command = placement.pinned ? ['taskset', '-c', placement.gatewayCpus, ...node] : node;
  const result = spawnSync(command[0], command.slice(1), { stdio: 'inherit' });
  if (result.status !== 0) throw new Error(`the in-process bench exited with ${result.status ?? result.signal}`);
}

if (require.main === module) {
  const { values } = parseArgs({ options: { seconds: { type: 'string' }, rounds: { type: 'string' } } });
  runInProcess({ seconds: values.seconds ? Number(values.seconds) : undefined, rounds: values.rounds ? Number(values.rounds) : undefined })
    .then((rows) => {
      const markdown = renderInProcess(rows);
      process.stdout.write(`${markdown}\n`);
      writeFileSync(join(RESULTS_DIR, 'latest-in-process.md'), `${markdown}\n`);
      process.exit(0);
    }, (error: unknown) => {
      process.stderr.write(`in-process: ${(error as Error).stack ?? String(error)}\n`);
      process.exit(1);
    });
}
