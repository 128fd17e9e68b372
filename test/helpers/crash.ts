// Shared parts of the crash tests (test/hostile/crash-*.test.ts, watchdog.test.ts): the real
// `tollgate serve` with two workers and the mock upstream, streams held in flight, its processes.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { get } from 'node:http';
import { startMockUpstream, type MockUpstream } from '../../scripts/mock-upstream';
import { LmdbStore as Store } from '../../src/store/lmdb';
import { cliJson, startSupervisor, type SupervisedGateway } from './gateway';
import { moneySnapshot, type MoneySnapshot } from './money';
import { chatConfig, createKey, sleep, writeConfigFile } from '../integration/chat-harness';

/** Content chunks of a mock stream and the pause between them: a call stays in flight ~1.5 s. */
const CHUNKS = 30;
const CHUNK_DELAY_MS = 50;
export const CALLS = 12;

/** Pids of the live child processes of `parent` (from /proc). */
export function childPids(parent: number): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === parent && fields[0] !== 'Z') pids.push(Number(entry));
    } catch { /* gone meanwhile */ }
  }
  return pids;
}

/** Established connections process `pid` holds on local port `port` (its socket fds matched against /proc/net/tcp*). */
export function connectionsOn(pid: number, port: number): number {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const socket = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (socket) inodes.add(socket[1]);
    } catch { /* closed meanwhile */ }
  }
  let count = 0;
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try { text = readFileSync(table, 'utf8'); } catch { continue; }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // local address, remote address, state (01: established), …, inode
      if (fields.length > 9 && parseInt(fields[1].split(':')[1], 16) === port && fields[3] === '01' && inodes.has(fields[9])) count += 1;
    }
  }
  return count;
}

export const alive = (pid: number) => { try { process.kill(pid, 0); return true; } catch { return false; } };

export async function until(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

/** A request not answered, refused or reset within this long is held: what a client must never see. */
export const HELD_MS = 10_000;

/** GET /healthz on a connection of its own: the pid that answered, 'refused' (refused or reset), or 'held'. */
export function probe(url: string): Promise<number | 'refused' | 'held'> {
  return new Promise((resolve) => {
    const request = get(`${url}/healthz`, { agent: false }, (response) => {
      const parts: Buffer[] = [];
      response.on('data', (chunk: Buffer) => parts.push(chunk));
      response.on('end', () => {
        try { resolve((JSON.parse(Buffer.concat(parts).toString('utf8')) as { pid: number }).pid); } catch { resolve('refused'); }
      });
      response.on('error', () => resolve('refused'));
    });
    request.setTimeout(HELD_MS, () => { request.destroy(); resolve('held'); });
    request.on('error', () => resolve('refused'));
  });
}

export interface StreamCall { status: number; text: string; started: Promise<void>; done: Promise<void> }

/** A streaming chat call on a connection of its own; `started` resolves at its first bytes. */
export function streamCall(url: string, key: string): StreamCall {
  const result = { status: 0, text: '' } as StreamCall;
  let markStarted!: () => void;
  result.started = new Promise((resolve) => { markStarted = resolve; });
  result.done = (async () => {
    try {
      const response = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', connection: 'close' },
        body: JSON.stringify({ model: 'mock-chat', stream: true, messages: [{ role: 'user', content: 'tell me a story' }] }),
      });
      result.status = response.status;
      const decoder = new TextDecoder();
      for await (const chunk of response.body!) {
        result.text += decoder.decode(chunk as Uint8Array, { stream: true });
        markStarted();
      }
    } catch { /* a connection cut by a killed worker */ }
    markStarted();
  })();
  return result;
}

export const completed = (call: StreamCall) => call.status === 200 && call.text.endsWith('data: [DONE]\n\n') && !call.text.includes('"error"');


/** The mock upstream every crash test uses: streams of CHUNKS chunks, CHUNK_DELAY_MS apart. */
export function startCrashMock(): Promise<MockUpstream> {
  return startMockUpstream({ record: false, chunks: CHUNKS, chunkDelayMs: CHUNK_DELAY_MS });
}

export interface Served { gateway: SupervisedGateway; key: { id: number; key: string }; store: Store; before: MoneySnapshot }

/** `tollgate serve` with two workers on `mock`, 100 USD on admin, one capped key, the money snapshot before. */
export async function serve(mock: MockUpstream, front: string, limits: Record<string, unknown> = {}): Promise<Served> {
  const raw = chatConfig(mock.url);
  raw.limits = { ...(raw.limits as object), ...limits };
  const gateway = await startSupervisor({ workers: 2, configPath: writeConfigFile(raw), env: { TOLLGATE_FRONT: front } });
  await cliJson(['account', 'topup', '--account', 'admin', '--usd', '100'], gateway.dataDir);
  const key = await createKey(gateway.url, gateway.adminToken(), { remain_quota: 5_000_000 });
  const store = Store.open(gateway.dataDir);
  return { gateway, key, store, before: await moneySnapshot(store) };
}

/** CALLS streams, each on a connection of its own, all past their first bytes. */
export async function load(url: string, key: string): Promise<StreamCall[]> {
  const calls = Array.from({ length: CALLS }, () => streamCall(url, key));
  await Promise.all(calls.map((call) => call.started));
  return calls;
}
