// Load scenarios: autocannon for throughput and latency, a small undici loop for time to first
// streamed byte, and raw sockets for idle keep-alive connections. Latency percentiles come from
// every response's own timing (autocannon's histogram rounds to whole milliseconds, too coarse for
// sub-millisecond targets).
import autocannon from 'autocannon';
import { connect, type Socket } from 'node:net';
import { Client } from '../src/upstream/undici';
import { eventsPerStream, shapeMember, type Dialect, type ShapeRequest } from './fast-mock';
import { cpuSeconds } from './processes';
import { StreamClients } from './streams';

export interface Endpoint {
  /** full URL of the chat completions endpoint (or, from dialectEndpoint, of /v1/messages) */
  url: string;
  headers: Record<string, string>;
  /** what a completed stream's last event holds (default `data: [DONE]`, chat's) */
  endMarker?: string;
}

/** the last event of a Messages stream */
const MESSAGES_END = '{"type":"message_stop"}';

export type ScenarioId = 'chat-1' | 'stream-1' | 'chat-50' | 'stream-50' | 'burst-50' | 'per-turn-50' | 'live' | 'messages-live' | 'agent-20' | 'claude-code-20';

/** The model the benchmark's Tollgate serves on /v1/messages, from an `anthropic` channel (the fast mock's Messages answers). */
export const BENCH_MESSAGES_MODEL = 'bench-claude';

export interface Scenario {
  id: ScenarioId;
  label: string;
  stream: boolean;
  connections: number;
  /** the route: chat completions (default), or /v1/messages with an Anthropic request for BENCH_MESSAGES_MODEL */
  dialect?: Dialect;
  /** how the mock sends the stream (absent: one HTTP chunk, the mock's default) */
  shape?: ShapeRequest;
  /** SSE events per call, for CPU per event (streams only) */
  events?: number;
  /** long calls: measured with StreamClients over a window of steady state, for this many seconds */
  windowSeconds?: number;
  /** the request body (absent: the short request of its dialect, chatBody or messagesBody) */
  body?: (model: string, stream: boolean) => string;
}

/** Connections of the scenarios that send coding agents' large requests. */
export const AGENT_CONNECTIONS = 20;

export interface ScenarioOptions {
  /** connections of the short throughput scenarios */
  connections: number;
  /** content chunks of the short streams */
  chunks: number;
  /** the live shape: concurrent streams, content chunks per stream, milliseconds between events */
  live: { connections: number; chunks: number; gapMs: number; seconds: number };
}

export function scenarios(options: ScenarioOptions): Scenario[] {
  const { connections, chunks, live } = options;
  const events = eventsPerStream(chunks);
  return [
    { id: 'chat-1', label: 'non-stream, 1 connection', stream: false, connections: 1 },
    { id: 'stream-1', label: 'stream, 1 connection', stream: true, connections: 1, events },
    { id: 'chat-50', label: `non-stream, ${connections} connections`, stream: false, connections },
    { id: 'stream-50', label: `stream in one HTTP chunk, ${connections} connections`, stream: true, connections, events },
    {
      id: 'burst-50', label: `stream burst (${events} events, each its own HTTP chunk, in one TCP write), ${connections} connections`,
      stream: true, connections, events, shape: { shape: 'burst', contentChunks: chunks, gapMs: 0 },
    },
    {
      id: 'per-turn-50', label: `stream per-turn (${events} events, one per upstream event-loop turn), ${connections} connections`,
      stream: true, connections, events, shape: { shape: 'per-turn', contentChunks: chunks, gapMs: 0 },
    },
    {
      id: 'live', label: `stream live (${eventsPerStream(live.chunks)} events ${live.gapMs} ms apart), ${live.connections} connections`,
      stream: true, connections: live.connections, events: eventsPerStream(live.chunks),
      shape: { shape: 'live', contentChunks: live.chunks, gapMs: live.gapMs }, windowSeconds: live.seconds,
    },
    // the same model on /v1/messages, as Claude Code streams it from an Anthropic channel
    {
      id: 'messages-live', label: `messages stream live (${eventsPerStream(live.chunks, 'messages')} events ${live.gapMs} ms apart), ${live.connections} connections`,
      stream: true, dialect: 'messages', connections: live.connections, events: eventsPerStream(live.chunks, 'messages'),
      shape: { shape: 'live', contentChunks: live.chunks, gapMs: live.gapMs }, windowSeconds: live.seconds,
    },
    // coding agents' requests as they send them: what a large request costs beside the pass-through
    {
      id: 'agent-20', label: `non-stream, a coding agent's 29 KB chat request (tools, 20 rounds, Chinese), ${AGENT_CONNECTIONS} connections`,
      stream: false, connections: AGENT_CONNECTIONS, body: agentChatBody,
    },
    {
      id: 'claude-code-20', label: `messages non-stream, Claude Code's 115 KB request, ${AGENT_CONNECTIONS} connections`,
      stream: false, dialect: 'messages', connections: AGENT_CONNECTIONS, body: claudeCodeMessagesBody,
    },
  ];
}

/** Scenarios that load the gateway with many connections (measured in alternated rounds and checked). */
export function isThroughput(scenario: Scenario): boolean {
  return scenario.connections > 1;
}

export function chatBody(model: string, stream: boolean, shape?: ShapeRequest): string {
  return JSON.stringify({
    model,
    messages: [
      { role: 'system', content: 'You are a helpful assistant.' },
      { role: 'user', content: 'Say hello in one short sentence.' },
    ],
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
    ...(stream && shape ? shapeMember(shape) : {}),
  });
}

/** A /v1/messages request as the Anthropic SDK sends it (max_tokens is required there). */
export function messagesBody(model: string, stream: boolean, shape?: ShapeRequest): string {
  return JSON.stringify({
    model, max_tokens: 1024,
    system: 'You are a helpful assistant.',
    messages: [{ role: 'user', content: 'Say hello in one short sentence.' }],
    ...(stream ? { stream: true } : {}),
    ...(stream && shape ? shapeMember(shape) : {}),
  });
}

/** The endpoint of a scenario's route: the chat completions URL as given, or /v1/messages beside it. */
export function dialectEndpoint(endpoint: Endpoint, dialect: Dialect = 'chat'): Endpoint {
  if (dialect === 'chat') return endpoint;
  const url = new URL(endpoint.url);
  url.pathname = url.pathname.replace(/\/chat\/completions$/, '/messages');
  return { url: url.toString(), headers: endpoint.headers, endMarker: MESSAGES_END };
}

/**
 * A coding agent's chat request as real clients send them: twelve tools with JSON schemas, and a
 * history of 20 rounds (a Chinese question, a tool call, a file read back with its line numbers
 * marked "→" as Claude Code's Read tool marks them, an answer mixing Chinese and English). ~29 KB.
 */
export function agentChatBody(model: string, stream: boolean): string {
  const tools = Array.from({ length: 12 }, (_, index) => ({
    type: 'function',
    function: {
      name: `workspace_tool_${index}`, description: `Runs operation ${index} on the workspace and returns JSON. 在工作区中执行操作 ${index}。`,
      parameters: { type: 'object', properties: { path: { type: 'string', description: 'file path' }, query: { type: 'string' }, limit: { type: 'integer', minimum: 1, maximum: 100 } }, required: ['path'] },
    },
  }));
  const messages: Record<string, unknown>[] = [{ role: 'system', content: 'You are a coding agent working in the user\'s repository. 你是一个编程助手，请用中文回答。'.repeat(3) }];
  for (let round = 0; round < 20; round += 1) {
    const file = Array.from({ length: 12 }, (_, line) => `${String(line + 1).padStart(6)}→  const value${line} = compute(input, ${round * 12 + line}); // 第${line}步`).join('\n');
    messages.push({ role: 'user', content: `第${round}轮：请读取文件 src/module_${round}.ts 并解释其中的函数。Also check the tests of module ${round}.` });
    messages.push({ role: 'assistant', content: null, tool_calls: [{ id: `call_${round}`, type: 'function', function: { name: 'workspace_tool_1', arguments: JSON.stringify({ path: `src/module_${round}.ts`, limit: 50 }) } }] });
    messages.push({ role: 'tool', tool_call_id: `call_${round}`, content: file });
    messages.push({ role: 'assistant', content: `模块 ${round} 的函数把输入乘以系数再加一。The function is pure; 测试覆盖了边界情况。` });
  }
  messages.push({ role: 'user', content: '请总结所有模块的共同点。' });
  return JSON.stringify({ model, messages, tools, tool_choice: 'auto', temperature: 0.2, ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}) });
}

/**
 * A Claude Code request on /v1/messages, as it sends them some turns into a session: a long system
 * prompt in cache-controlled blocks, sixteen tools with long descriptions and JSON schemas, and a
 * history of tool use whose results are files read back with Claude Code's "→" line marks and
 * command output with box-drawing characters. ~115 KB, mostly ASCII (as one string, past the 64 K
 * two-byte characters V8 keeps out of its large-object space).
 */
export function claudeCodeMessagesBody(model: string, stream: boolean): string {
  const system = [
    { type: 'text', text: 'You are Claude Code, Anthropic\'s official CLI for Claude.' },
    { type: 'text', text: 'You are an interactive CLI tool that helps users with software engineering tasks. Use the instructions below and the tools available to you to assist the user. '.repeat(60), cache_control: { type: 'ephemeral' } },
  ];
  const tools = Array.from({ length: 16 }, (_, index) => ({
    name: `Tool${index}`,
    description: `Performs operation ${index} in the working directory. Usage notes: the path must be absolute; results longer than 30000 characters are truncated; prefer this tool over shell commands for operation ${index}. `.repeat(6),
    input_schema: {
      type: 'object', additionalProperties: false, $schema: 'http://json-schema.org/draft-07/schema#',
      properties: { file_path: { type: 'string', description: 'The absolute path to the file' }, offset: { type: 'number', description: 'The line number to start reading from' }, limit: { type: 'number', description: 'The number of lines to read' } },
      required: ['file_path'],
    },
  }));
  const messages: Record<string, unknown>[] = [];
  for (let round = 0; round < 6; round += 1) {
    const file = Array.from({ length: 120 }, (_, line) => `${String(line + 1).padStart(6)}→export function step${round}_${line}(state: State): State { return { ...state, count: state.count + ${line} }; }`).join('\n');
    messages.push({ role: 'user', content: [{ type: 'text', text: `Read src/step${round}.ts and make every step pure.` }] });
    messages.push({ role: 'assistant', content: [{ type: 'text', text: 'I\'ll read the file first.' }, { type: 'tool_use', id: `toolu_${round}`, name: 'Tool1', input: { file_path: `/work/src/step${round}.ts` } }] });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: `toolu_${round}`, content: file }] });
    messages.push({ role: 'assistant', content: [{ type: 'tool_use', id: `toolu_${round}b`, name: 'Tool3', input: { command: 'npm test' } }] });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: `toolu_${round}b`, content: `├── step${round}.test.ts ✓ 120 passed\n└── done in 1.2 s` }] });
  }
  messages.push({ role: 'user', content: [{ type: 'text', text: 'Now summarise the changes.', cache_control: { type: 'ephemeral' } }] });
  return JSON.stringify({ model, max_tokens: 32000, system, tools, messages, metadata: { user_id: 'user_0123456789abcdef_account__session_0123' }, ...(stream ? { stream: true } : {}) });
}

export interface Percentiles { p50: number; p90: number; p99: number; mean: number; max: number; count: number }

/** Growable list of float samples (milliseconds). */
export class Samples {
  private values = new Float64Array(4096);
  length = 0;

  push(value: number): void {
    if (this.length === this.values.length) {
      const grown = new Float64Array(this.values.length * 2);
      grown.set(this.values);
      this.values = grown;
    }
    this.values[this.length++] = value;
  }

  percentiles(): Percentiles {
    const sorted = this.values.slice(0, this.length).sort();
    const at = (quantile: number) => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(quantile * sorted.length) - 1))]);
    let sum = 0;
    for (const value of sorted) sum += value;
    return { p50: at(0.5), p90: at(0.9), p99: at(0.99), mean: sorted.length ? sum / sorted.length : 0, max: at(1), count: sorted.length };
  }
}

export interface LoadResult {
  connections: number;
  durationSeconds: number;
  /** 2xx responses (long streams: calls' worth of answer bytes read in the window) */
  ok: number;
  requestsPerSecond: number;
  latencyMs: Percentiles;
  non2xx: number;
  errors: number;
  timeouts: number;
  bytesPerSecond: number;
  /** CPU used by the target's processes during the measured run, % of one core (null: not known) */
  serverCpuPercent: number | null;
  /** CPU time of the target's processes (all their threads) during the measured run, seconds (null: not known) */
  serverCpuSeconds?: number | null;
  /** failed calls by reason (long streams only; autocannon reports counts) */
  failures?: Record<string, number>;
  /** CPU used by the load generator (this process) during the measured run, % of one core */
  clientCpuPercent: number;
}

function cannon(options: autocannon.Options, onResponse?: (status: number, milliseconds: number) => void): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    const instance = autocannon(options, (error, result) => (error ? reject(error) : resolve(result)));
    if (onResponse) instance.on('response', (_client, status, _bytes, milliseconds) => onResponse(status, milliseconds));
  });
}

/** A warm-up run (discarded), then the measured run; both bounded in time. */
export async function runLoad(endpoint: Endpoint, body: string, connections: number, durationSeconds: number, warmupSeconds: number,
  serverPids?: () => number[]): Promise<LoadResult> {
  const base: autocannon.Options = {
    url: endpoint.url, method: 'POST', headers: { 'content-type': 'application/json', ...endpoint.headers },
    body, connections, pipelining: 1, timeout: 10,
  };
  if (warmupSeconds > 0) await cannon({ ...base, duration: warmupSeconds });
  const latencies = new Samples();
  const pids = serverPids?.() ?? [];
  const serverBefore = cpuSeconds(pids);
  const clientBefore = process.cpuUsage();
  const started = process.hrtime.bigint();
  const result = await cannon({ ...base, duration: durationSeconds }, (status, milliseconds) => {
    if (status >= 200 && status < 300) latencies.push(milliseconds);
  });
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  const client = process.cpuUsage(clientBefore);
  const serverCpuSeconds = serverPids ? cpuSeconds(pids) - serverBefore : null;
  const ok = result['2xx'];
  return {
    connections, durationSeconds: result.duration, ok,
    requestsPerSecond: ok / result.duration,
    latencyMs: latencies.percentiles(),
    non2xx: result.non2xx, errors: result.errors, timeouts: result.timeouts,
    bytesPerSecond: result.throughput.average,
    serverCpuPercent: serverCpuSeconds === null ? null : (serverCpuSeconds / elapsed) * 100, serverCpuSeconds,
    clientCpuPercent: ((client.user + client.system) / 1e6 / elapsed) * 100,
  };
}

/** the most a long-stream scenario waits for every connection to finish its first call */
const LONG_WARMUP_LIMIT_MS = 30_000;

/**
 * Long streams on `connections` keep-alive connections: warm-up until every connection has had
 * time for a call, then CPU and completed calls counted over a window of `windowSeconds` in steady
 * state. Failed calls of the whole run (warm-up included) are reported as errors.
 */
export async function runLongStreams(endpoint: Endpoint, body: string, connections: number, windowSeconds: number, warmupSeconds: number,
  serverPids?: () => number[]): Promise<LoadResult> {
  const clients = new StreamClients(endpoint, body, connections);
  try {
    await clients.start();
    // steady state: every connection has finished a call (bounded), and at least the warm-up passed
    const warmupEnds = Date.now() + warmupSeconds * 1000;
    await clients.until((counts) => counts.completed + counts.failed >= connections, LONG_WARMUP_LIMIT_MS);
    if (Date.now() < warmupEnds) await new Promise((resolve) => setTimeout(resolve, warmupEnds - Date.now()));
    clients.takeLatencies();
    const pids = serverPids?.() ?? [];
    const before = clients.counts();
    const serverBefore = cpuSeconds(pids);
    const clientBefore = process.cpuUsage();
    const started = process.hrtime.bigint();
    await new Promise((resolve) => setTimeout(resolve, windowSeconds * 1000));
    const after = clients.counts();
    const serverCpuSeconds = serverPids ? cpuSeconds(pids) - serverBefore : null;
    const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
    const client = process.cpuUsage(clientBefore);
    // Calls in the window counted by their bytes: streams that started together end together, so
    // completions come in waves a short window may miss; bytes flow evenly (every call of one
    // target answers the same bytes, measured on the calls completed so far).
    const bytesPerCall = after.completed > 0 ? after.completedBytes / after.completed : 0;
    const ok = bytesPerCall > 0 ? (after.receivedBytes - before.receivedBytes) / bytesPerCall : 0;
    return {
      connections, durationSeconds: elapsed, ok, requestsPerSecond: ok / elapsed, latencyMs: clients.takeLatencies().percentiles(),
      non2xx: Object.entries(after.failures).reduce((sum, [reason, count]) => sum + (reason.startsWith('status ') ? count : 0), 0),
      errors: after.failed, timeouts: 0, bytesPerSecond: 0,
      serverCpuPercent: serverCpuSeconds === null ? null : (serverCpuSeconds / elapsed) * 100, serverCpuSeconds,
      clientCpuPercent: ((client.user + client.system) / 1e6 / elapsed) * 100,
      ...(after.failed > 0 ? { failures: after.failures } : {}),
    };
  } finally {
    clients.stop();
  }
}

/** One scenario against one target: autocannon for short calls, StreamClients for long streams. */
export function runScenario(chatEndpoint: Endpoint, model: string, scenario: Scenario, seconds: number, warmupSeconds: number,
  serverPids?: () => number[]): Promise<LoadResult> {
  const endpoint = dialectEndpoint(chatEndpoint, scenario.dialect);
  const scenarioModel = scenario.dialect === 'messages' ? BENCH_MESSAGES_MODEL : model;
  const body = scenario.body ? scenario.body(scenarioModel, scenario.stream)
    : scenario.dialect === 'messages' ? messagesBody(scenarioModel, scenario.stream, scenario.shape) : chatBody(scenarioModel, scenario.stream, scenario.shape);
  if (scenario.windowSeconds !== undefined) {
    return runLongStreams(endpoint, body, scenario.connections, scenario.windowSeconds, warmupSeconds, serverPids);
  }
  return runLoad(endpoint, body, scenario.connections, seconds, warmupSeconds, serverPids);
}

export interface FirstByteResult extends Percentiles {
  /** responses that were not 200 or did not end with data: [DONE] */
  bad: number;
}

/**
 * Time from sending a streaming request to its first body byte, one connection, one request at a
 * time. Bounded by a count and a time limit.
 */
export async function measureFirstByte(endpoint: Endpoint, body: string, count: number, maxSeconds: number, warmup = 50): Promise<FirstByteResult> {
  const url = new URL(endpoint.url);
  const client = new Client(url.origin, { pipelining: 1, keepAliveTimeout: 30_000 });
  const headers = { 'content-type': 'application/json', ...endpoint.headers };
  const samples = new Samples();
  let bad = 0;
  const deadline = Date.now() + maxSeconds * 1000;
  try {
    for (let index = 0; index < warmup + count && Date.now() < deadline; index += 1) {
      const started = process.hrtime.bigint();
      const response = await client.request({ method: 'POST', path: url.pathname + url.search, headers, body });
      let firstByte: bigint | null = null;
      let tail = '';
      await new Promise<void>((resolve, reject) => {
        response.body.on('data', (chunk: Buffer) => {
          firstByte ??= process.hrtime.bigint();
          tail = (tail + chunk.toString('latin1')).slice(-64);
        });
        response.body.once('end', resolve);
        response.body.once('error', reject);
      });
      if (response.statusCode !== 200 || !tail.includes('[DONE]') || firstByte === null) { bad += 1; continue; }
      if (index >= warmup) samples.push(Number((firstByte as bigint) - started) / 1e6);
    }
  } finally {
    await client.close().catch(() => client.destroy());
  }
  return { ...samples.percentiles(), bad };
}

/** Checks one answer of each kind before measuring, so a broken target fails loudly, not as a fast table. */
export async function checkEndpoint(chatEndpoint: Endpoint, model: string, dialect: Dialect = 'chat'): Promise<void> {
  const endpoint = dialectEndpoint(chatEndpoint, dialect);
  const url = new URL(endpoint.url);
  const client = new Client(url.origin);
  try {
    for (const stream of [false, true]) {
      const response = await client.request({
        method: 'POST', path: url.pathname + url.search, headers: { 'content-type': 'application/json', ...endpoint.headers },
        body: dialect === 'chat' ? chatBody(model, stream) : messagesBody(model, stream),
      });
      const text = await response.body.text();
      const expected = dialect === 'chat' ? (stream ? '[DONE]' : '"choices"') : (stream ? MESSAGES_END : '"type":"message"');
      if (response.statusCode !== 200 || !text.includes(expected)) {
        throw new Error(`${endpoint.url} answered ${response.statusCode} to a ${stream ? 'stream' : 'non-stream'} request: ${text.slice(0, 300)}`);
      }
    }
  } finally {
    await client.close().catch(() => client.destroy());
  }
}

export interface IdleReport {
  requested: number;
  connected: number;
  /** answered 200 to their GET /healthz */
  answered: number;
  errors: number;
  errorCodes: Record<string, number>;
  /** closed by the server (a clean close, not an error) */
  closedByServer: number;
  /** of those, closed after less than EARLY_CLOSE_MS of idleness: not an idle timeout */
  closedEarly: number;
  /** shortest idle time before a server close, seconds (null: none closed) */
  shortestIdleBeforeCloseSeconds: number | null;
  /** still open when the throughput scenario ended */
  stillOpen: number;
  openSeconds: number;
}

/**
 * A server may close a keep-alive connection idle this long; a close sooner counts against it. uWS
 * closes after 10 s idle, swept with a 4 s granularity, so its closes land 8–12 s after the answer.
 */
export const EARLY_CLOSE_MS = 7_000;

/** Keep-alive connections that each send one GET /healthz and then stay idle. */
export class IdleConnections {
  private readonly sockets = new Set<Socket>();
  private connected = 0;
  private answered = 0;
  private errors = 0;
  private closedByServer = 0;
  private closedEarly = 0;
  private shortestIdleMs: number | null = null;
  private readonly errorCodes: Record<string, number> = {};
  private closing = false;
  private openedAt = 0;

  constructor(private readonly url: string, private readonly count: number) {}

  /** Opens them at most `parallel` at a time; resolves when each has answered or failed (bounded). */
  async open(parallel = 250, timeoutMs = 60_000): Promise<void> {
    const target = new URL(this.url);
    const port = Number(target.port || 80);
    const request = `GET /healthz HTTP/1.1\r\nHost: ${target.host}\r\nConnection: keep-alive\r\n\r\n`;
    const deadline = Date.now() + timeoutMs;
    let next = 0;
    const openOne = () => new Promise<void>((resolve) => {
      const socket = connect({ host: target.hostname, port });
      this.sockets.add(socket);
      let settled = false;
      let answeredThis = false;
      let answeredAt = 0;
      const settle = () => { if (!settled) { settled = true; resolve(); } };
      socket.setNoDelay(true);
      socket.once('connect', () => { this.connected += 1; socket.write(request); });
      socket.on('data', (chunk: Buffer) => {
        if (!answeredThis) {
          answeredThis = true;
          answeredAt = Date.now();
          if (chunk.toString('latin1', 0, 12) === 'HTTP/1.1 200') this.answered += 1;
          else this.countError('non-200 answer');
          settle();
        }
      });
      socket.on('error', (error: NodeJS.ErrnoException) => { this.countError(error.code ?? error.message); settle(); });
      socket.on('close', () => {
        this.sockets.delete(socket);
        if (!this.closing && answeredThis) {
          const idleMs = Date.now() - answeredAt;
          this.closedByServer += 1;
          if (idleMs < EARLY_CLOSE_MS) this.closedEarly += 1;
          this.shortestIdleMs = Math.min(this.shortestIdleMs ?? idleMs, idleMs);
        }
        settle();
      });
    });
    const lanes = Array.from({ length: Math.min(parallel, this.count) }, async () => {
      while (next < this.count && Date.now() < deadline) {
        next += 1;
        await openOne();
      }
    });
    await Promise.all(lanes);
    this.openedAt = Date.now();
  }

  private countError(code: string): void {
    this.errors += 1;
    this.errorCodes[code] = (this.errorCodes[code] ?? 0) + 1;
  }

  report(): IdleReport {
    return {
      requested: this.count, connected: this.connected, answered: this.answered, errors: this.errors,
      errorCodes: { ...this.errorCodes }, closedByServer: this.closedByServer, closedEarly: this.closedEarly,
      shortestIdleBeforeCloseSeconds: this.shortestIdleMs === null ? null : this.shortestIdleMs / 1000, stillOpen: this.sockets.size,
      openSeconds: this.openedAt ? (Date.now() - this.openedAt) / 1000 : 0,
    };
  }

  close(): void {
    this.closing = true;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }
}
