// The command line of `npm run bench` (bench/run.ts): its options, their defaults and checks, and
// the command as it is shown in a report.
import { parseArgs } from 'node:util';
import type { ScenarioOptions } from './load';

const USAGE = `npm run bench -- [options]
  --duration S        measured seconds per scenario (default 5)
  --rounds N          then each throughput scenario again in N rounds, pass-through and Tollgate alternated (default 6; 0 = off)
  --round-seconds S   measured seconds of each target in a round (default 2, after a 0.5 s warm-up)
  --warmup S          warm-up seconds before each scenario (default 1)
  --start-warmup S    load each target gets once after its start, before its first scenario, half non-stream and half
                      stream at 8 connections, so that its JIT has settled (default 6; 0 = off)
  --connections N     connections of the throughput scenarios (default 50)
  --scenarios LIST    only these scenarios (ids: chat-1,stream-1,chat-50,stream-50,burst-50,per-turn-50,live,messages-live,agent-20,claude-code-20)
  --live-connections N   concurrent streams of the live shape (default 300)
  --live-chunks N     content chunks of a live stream (default 100: 104 events)
  --live-gap-ms N     milliseconds between a live stream's events (default 10)
  --live-seconds S    measured window of the live shape, in steady state (default 4)
  --memory-streams N  concurrent live streams of the memory scenario (default 2000; 0 = no memory scenarios)
  --memory-chunks N   content chunks of those streams (default 200)
  --memory-gap-ms N   milliseconds between their events (default 50)
  --memory-only       only the memory scenarios (with --memory-streams 0: only the idle deployments)
  --idle N            idle keep-alive connections held against Tollgate meanwhile (default 5000; 0 = off)
  --ttfb-requests N   streaming requests timed to their first byte (default 2000, at most 15 s)
  --chunks N          content chunks per mock stream (default 20)
  --gateway-cpus L    CPU list of the gateway under test (default 0)
  --client-cpus L     CPU list of the mock and the load generator (default 1)
  --target URL --key KEY [--model M]   benchmark any OpenAI-compatible endpoint instead
  --soak [--requests N] [--max-seconds S]   N mixed requests through Tollgate (default 1,000,000, 3600 s)
  --profile           V8 CPU profile of Tollgate's processes (bench/results/profiles/), summarised in the table
  --micro             micro benchmarks (tinybench)
  --in-process        the gateway's own work per chat call: its dispatcher driven in memory, no network (rounds, round-seconds apply)
  --cluster           the cluster backend: a node on PostgreSQL + Redis beside one on LMDB, limits off and on (rounds, round-seconds, connections apply)
  --runtimes          Tollgate on Node + uWS, Node + node:http and Bun + node:http: CPU per call, req/s, worker RSS (rounds, round-seconds, warmup, connections apply)`;

export interface Options {
  duration: number; warmup: number; startWarmup: number; connections: number; idle: number; ttfbRequests: number; chunks: number;
  rounds: number; roundSeconds: number; only?: Set<string>;
  live: ScenarioOptions['live']; memory: { streams: number; chunks: number; gapMs: number };
  gatewayCpus?: string; clientCpus?: string; target?: string; key?: string; model?: string;
  memoryOnly: boolean; soak: boolean; requests: number; maxSeconds: number; micro: boolean; inProcess: boolean; profile: boolean; cluster: boolean; runtimes: boolean;
  /** set from --profile: where Tollgate's processes write their profiles */
  profileDir?: string;
}

function positive(name: string, text: string | undefined, fallback: number, allowZero = false): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0 || (!allowZero && value === 0)) throw new Error(`--${name} needs a ${allowZero ? 'non-negative' : 'positive'} number`);
  return value;
}

export function parseOptions(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv, strict: true, allowPositionals: false,
    options: {
      duration: { type: 'string' }, warmup: { type: 'string' }, 'start-warmup': { type: 'string' }, connections: { type: 'string' }, idle: { type: 'string' },
      scenarios: { type: 'string' }, 'live-connections': { type: 'string' }, 'live-chunks': { type: 'string' }, 'live-gap-ms': { type: 'string' },
      'live-seconds': { type: 'string' }, 'memory-streams': { type: 'string' }, 'memory-chunks': { type: 'string' }, 'memory-gap-ms': { type: 'string' }, 'memory-only': { type: 'boolean' },
      rounds: { type: 'string' }, 'round-seconds': { type: 'string' },
      'ttfb-requests': { type: 'string' }, chunks: { type: 'string' }, 'gateway-cpus': { type: 'string' }, 'client-cpus': { type: 'string' },
      target: { type: 'string' }, key: { type: 'string' }, model: { type: 'string' },
      soak: { type: 'boolean' }, requests: { type: 'string' }, 'max-seconds': { type: 'string' }, micro: { type: 'boolean' }, 'in-process': { type: 'boolean' }, profile: { type: 'boolean' },
      cluster: { type: 'boolean' }, runtimes: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) { process.stdout.write(`${USAGE}\n`); process.exit(0); }
  if (values.target && !values.key) throw new Error('--target needs --key');
  const integer = (name: string, text: string | undefined, fallback: number, allowZero = false) => Math.round(positive(name, text, fallback, allowZero));
  return {
    duration: positive('duration', values.duration, 5),
    warmup: positive('warmup', values.warmup, 1, true),
    startWarmup: positive('start-warmup', values['start-warmup'], 6, true),
    only: values.scenarios ? new Set(values.scenarios.split(',').map((id) => id.trim())) : undefined,
    live: {
      connections: integer('live-connections', values['live-connections'], 300), chunks: integer('live-chunks', values['live-chunks'], 100),
      gapMs: integer('live-gap-ms', values['live-gap-ms'], 10, true), seconds: positive('live-seconds', values['live-seconds'], 4),
    },
    memory: {
      streams: integer('memory-streams', values['memory-streams'], 2000, true), chunks: integer('memory-chunks', values['memory-chunks'], 200),
      gapMs: integer('memory-gap-ms', values['memory-gap-ms'], 50, true),
    },
    rounds: Math.round(positive('rounds', values.rounds, 6, true)),
    roundSeconds: positive('round-seconds', values['round-seconds'], 2),
    connections: Math.round(positive('connections', values.connections, 50)),
    idle: Math.round(positive('idle', values.idle, values.target ? 0 : 5000, true)),
    ttfbRequests: Math.round(positive('ttfb-requests', values['ttfb-requests'], 2000, true)),
    chunks: Math.round(positive('chunks', values.chunks, 20, true)),
    gatewayCpus: values['gateway-cpus'], clientCpus: values['client-cpus'],
    target: values.target, key: values.key, model: values.model,
    memoryOnly: values['memory-only'] === true, soak: values.soak === true,
    requests: Math.round(positive('requests', values.requests, 1_000_000)),
    maxSeconds: positive('max-seconds', values['max-seconds'], 3600),
    micro: values.micro === true,
    inProcess: values['in-process'] === true,
    cluster: values.cluster === true,
    runtimes: values.runtimes === true,
    profile: values.profile === true,
  };
}

/** The command line as typed, with the key hidden (reports are shared). */
export function commandLine(argv: string[]): string {
  const shown = argv.map((argument, index) => (argv[index - 1] === '--key' ? '<key>' : argument.startsWith('--key=') ? '--key=<key>' : argument));
  const prefix = process.env.npm_lifecycle_event === 'bench' ? 'npm run bench' : 'node dist/bench/run.js';
  return shown.length > 0 ? `${prefix} ${prefix.startsWith('npm') ? '-- ' : ''}${shown.join(' ')}` : prefix;
}
