// `npm run bench`: Tollgate against its physical baseline in one run (DESIGN §6, issue 6).
//   default        (a) mock upstream direct, (b) minimal uWS + undici pass-through, (c) Tollgate
//   --target URL --key KEY [--model M]   the same scenarios against any OpenAI-compatible endpoint
//   --soak [--requests N]                N mixed requests through Tollgate, worker RSS watched
//   --micro                              tinybench micro benchmarks (bench/micro.ts)
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { checkEndpoint, chatBody, IdleConnections, measureFirstByte, runLoad, scenarios, type Endpoint, type Scenario } from './load';
import { ChildProcesses, choosePlacement, MemorySampler, pinSelf, readMemory, type Placement } from './processes';
import {
  checkLines, describeMachine, evaluateTargets, renderMarkdown, RESULTS_DIR, writeResults, type AlternatedRounds, type Check, type RunReport, type TargetRun,
} from './report';
import { runMicro } from './micro';
import { summarizeProfiles } from './profile';
import { runSoak, soakChecks } from './soak';
import { WORKER_V8_FLAGS } from '../src/supervisor';
import { BENCH_MODEL, startMock, startPassthroughProcess, startTollgate, type Tollgate } from './targets';

const USAGE = `npm run bench -- [options]
  --duration S        measured seconds per scenario (default 10)
  --rounds N          then each throughput scenario again in N rounds, pass-through and Tollgate alternated (default 6; 0 = off)
  --round-seconds S   measured seconds of each target in a round (default 2, after a 0.5 s warm-up)
  --warmup S          warm-up seconds before each scenario (default 2)
  --connections N     connections of the throughput scenarios (default 50)
  --idle N            idle keep-alive connections held against Tollgate meanwhile (default 5000; 0 = off)
  --ttfb-requests N   streaming requests timed to their first byte (default 2000, at most 15 s)
  --chunks N          content chunks per mock stream (default 20)
  --gateway-cpus L    CPU list of the gateway under test (default 0)
  --client-cpus L     CPU list of the mock and the load generator (default 1)
  --target URL --key KEY [--model M]   benchmark any OpenAI-compatible endpoint instead
  --soak [--requests N] [--max-seconds S]   N mixed requests through Tollgate (default 1,000,000, 3600 s)
  --profile           V8 CPU profile of Tollgate's processes (bench/results/profiles/), summarised in the table
  --micro             micro benchmarks (tinybench)`;

interface Options {
  duration: number; warmup: number; connections: number; idle: number; ttfbRequests: number; chunks: number;
  rounds: number; roundSeconds: number;
  gatewayCpus?: string; clientCpus?: string; target?: string; key?: string; model?: string;
  soak: boolean; requests: number; maxSeconds: number; micro: boolean; profile: boolean;
  /** set from --profile: where Tollgate's processes write their profiles */
  profileDir?: string;
}

function positive(name: string, text: string | undefined, fallback: number, allowZero = false): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0 || (!allowZero && value === 0)) throw new Error(`--${name} needs a ${allowZero ? 'non-negative' : 'positive'} number`);
  return value;
}

function parseOptions(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv, strict: true, allowPositionals: false,
    options: {
      duration: { type: 'string' }, warmup: { type: 'string' }, connections: { type: 'string' }, idle: { type: 'string' },
      rounds: { type: 'string' }, 'round-seconds': { type: 'string' },
      'ttfb-requests': { type: 'string' }, chunks: { type: 'string' }, 'gateway-cpus': { type: 'string' }, 'client-cpus': { type: 'string' },
      target: { type: 'string' }, key: { type: 'string' }, model: { type: 'string' },
      soak: { type: 'boolean' }, requests: { type: 'string' }, 'max-seconds': { type: 'string' }, micro: { type: 'boolean' }, profile: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) { process.stdout.write(`${USAGE}\n`); process.exit(0); }
  if (values.target && !values.key) throw new Error('--target needs --key');
  return {
    duration: positive('duration', values.duration, 10),
    warmup: positive('warmup', values.warmup, 2, true),
    rounds: Math.round(positive('rounds', values.rounds, 6, true)),
    roundSeconds: positive('round-seconds', values['round-seconds'], 2),
    connections: Math.round(positive('connections', values.connections, 50)),
    idle: Math.round(positive('idle', values.idle, values.target ? 0 : 5000, true)),
    ttfbRequests: Math.round(positive('ttfb-requests', values['ttfb-requests'], 2000, true)),
    chunks: Math.round(positive('chunks', values.chunks, 20, true)),
    gatewayCpus: values['gateway-cpus'], clientCpus: values['client-cpus'],
    target: values.target, key: values.key, model: values.model,
    soak: values.soak === true,
    requests: Math.round(positive('requests', values.requests, 1_000_000)),
    maxSeconds: positive('max-seconds', values['max-seconds'], 3600),
    micro: values.micro === true,
    profile: values.profile === true,
  };
}

/** The command line as typed, with the key hidden (reports are shared). */
function commandLine(argv: string[]): string {
  const shown = argv.map((argument, index) => (argv[index - 1] === '--key' ? '<key>' : argument.startsWith('--key=') ? '--key=<key>' : argument));
  const prefix = process.env.npm_lifecycle_event === 'bench' ? 'npm run bench' : 'node dist/bench/run.js';
  return shown.length > 0 ? `${prefix} ${prefix.startsWith('npm') ? '-- ' : ''}${shown.join(' ')}` : prefix;
}

/** The soft limit on open files of this process (the gateway inherits the same). */
function openFileLimit(): number {
  try {
    const match = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    if (match) return match[1] === 'unlimited' ? Number.MAX_SAFE_INTEGER : Number(match[1]);
  } catch { /* not Linux */ }
  return 1024;
}

function chatEndpoint(base: string, key?: string): Endpoint {
  const url = new URL(base);
  let path = url.pathname.replace(/\/+$/, '');
  if (!path.endsWith('/chat/completions')) path += path.endsWith('/v1') ? '/chat/completions' : '/v1/chat/completions';
  url.pathname = path;
  return { url: url.toString(), headers: key ? { authorization: `Bearer ${key}` } : {} };
}

function log(line: string): void { process.stderr.write(`${line}\n`); }

interface Measure { options: Options; scenarioList: Scenario[]; model: string }

interface Subject { run: TargetRun; endpoint: Endpoint; idle?: { count: number; url: string }; pids?: () => number[] }

/**
 * Every scenario against every target, interleaved (scenario by scenario, target after target) so a
 * slow minute of a shared machine hits all targets alike. Idle connections of a target are opened
 * before its first throughput scenario and held until its last one has ended.
 */
async function measureAll(subjects: Subject[], measure: Measure): Promise<void> {
  const { options, scenarioList, model } = measure;
  for (const subject of subjects) await checkEndpoint(subject.endpoint, model);
  const lastThroughput = scenarioList.filter((scenario) => scenario.connections > 1).at(-1);
  const open = new Map<Subject, IdleConnections>();
  try {
    for (const scenario of scenarioList) {
      for (const subject of subjects) {
        const { run, endpoint } = subject;
        if (scenario.connections > 1 && subject.idle && subject.idle.count > 0 && !open.has(subject)) {
          log(`  ${run.label}: opening ${subject.idle.count} idle keep-alive connections`);
          const idle = new IdleConnections(subject.idle.url, subject.idle.count);
          open.set(subject, idle);
          await idle.open();
        }
        log(`  ${run.label}: ${scenario.label}`);
        run.scenarios[scenario.id] = await runLoad(endpoint, chatBody(model, scenario.stream), scenario.connections, options.duration, options.warmup, subject.pids);
        if (scenario.id === 'stream-1' && options.ttfbRequests > 0) {
          log(`  ${run.label}: time to first byte`);
          run.firstByte = await measureFirstByte(endpoint, chatBody(model, true), options.ttfbRequests, 15);
        }
        const idle = open.get(subject);
        if (idle && scenario === lastThroughput) { run.idle = idle.report(); idle.close(); open.delete(subject); }
      }
    }
  } finally {
    for (const [subject, idle] of open) { subject.run.idle ??= idle.report(); idle.close(); }
  }
}

/** warm-up of a target at the start of its turn in a round: the other one had the machine before */
const ROUND_WARMUP_SECONDS = 0.5;

/**
 * Each throughput scenario again in short rounds, the pass-through and Tollgate in turn and the
 * order flipped every round, so both meet the same moments of a shared machine. A single pass of
 * each (measureAll) moved the ratio by several points from run to run.
 */
async function alternate(baseline: Subject, tollgate: Subject, measure: Measure): Promise<AlternatedRounds[]> {
  const { options, scenarioList, model } = measure;
  const results: AlternatedRounds[] = [];
  for (const scenario of scenarioList.filter((entry) => entry.connections > 1)) {
    log(`  alternated rounds: ${scenario.label}, ${options.rounds} × ${options.roundSeconds} s each`);
    const body = chatBody(model, scenario.stream);
    const measureOne = (subject: Subject) => runLoad(subject.endpoint, body, scenario.connections, options.roundSeconds, ROUND_WARMUP_SECONDS, subject.pids);
    const rounds: AlternatedRounds['rounds'] = [];
    for (let round = 0; round < options.rounds; round += 1) {
      if (round % 2 === 0) {
        const passthrough = await measureOne(baseline);
        rounds.push({ passthrough, tollgate: await measureOne(tollgate) });
      } else {
        const ours = await measureOne(tollgate);
        rounds.push({ passthrough: await measureOne(baseline), tollgate: ours });
      }
    }
    results.push({ scenario: scenario.id, rounds });
  }
  return results;
}

function newRun(id: TargetRun['id'], label: string, url: string): TargetRun {
  return { id, label, url, scenarios: {}, memory: [] };
}

function tollgateMemory(tollgate: Tollgate, sampler: MemorySampler): { process: string; peakKb: number }[] {
  return [...sampler.peakKb].map(([pid, peakKb]) => ({ process: pid === tollgate.supervisorPid ? `supervisor (pid ${pid})` : `worker (pid ${pid})`, peakKb }));
}

async function compare(options: Options, placement: Placement, children: ChildProcesses, notes: string[]): Promise<{ targets: TargetRun[]; checks: Check[]; alternated: AlternatedRounds[] }> {
  const measure: Measure = { options, scenarioList: scenarios(options.connections), model: BENCH_MODEL };
  log('starting the mock upstream, the pass-through and Tollgate');
  const mock = await startMock(children, placement, options.chunks);
  const passthrough = await startPassthroughProcess(children, placement, mock.url);
  const tollgate = await startTollgate(children, placement, mock.url, 100_000, options.profileDir);
  try {
    const direct = newRun('mock', '(a) mock direct', mock.url);
    const baseline = newRun('passthrough', '(b) pass-through', passthrough.url);
    const full = newRun('tollgate', '(c) Tollgate', tollgate.url);
    const baselineSampler = new MemorySampler(() => [passthrough.pid]);
    const sampler = new MemorySampler(() => [tollgate.supervisorPid, ...tollgate.workerPids()]);
    baselineSampler.start();
    sampler.start();
    const baselineSubject: Subject = { run: baseline, endpoint: chatEndpoint(passthrough.url), pids: () => [passthrough.pid] };
    const tollgateSubject: Subject = {
      run: full, endpoint: chatEndpoint(tollgate.url, tollgate.key), idle: { count: options.idle, url: tollgate.url },
      pids: () => [tollgate.supervisorPid, ...tollgate.workerPids()],
    };
    await measureAll([{ run: direct, endpoint: chatEndpoint(mock.url), pids: () => [mock.pid] }, baselineSubject, tollgateSubject], measure);
    const alternated = options.rounds > 0 ? await alternate(baselineSubject, tollgateSubject, measure) : [];
    baselineSampler.stop();
    sampler.stop();
    baseline.memory = [...baselineSampler.peakKb].map(([pid, peakKb]) => ({ process: `pass-through (pid ${pid})`, peakKb }));
    full.memory = tollgateMemory(tollgate, sampler);
    const workerCount = full.memory.filter((entry) => entry.process.startsWith('worker')).length;
    if (workerCount > 1) {
      notes.push(`WARNING: Tollgate's worker died and was replaced during the run (${workerCount} worker pids seen); `
        + `its stderr ended with: ${children.stderrOf(tollgate.supervisorPid).trim().slice(-600) || '(nothing)'}`);
    }
    await children.stop(tollgate.supervisorPid);
    const targets = [direct, baseline, full];
    notes.push('Tollgate: supervisor + 1 worker (TOLLGATE_WORKERS=1), fresh data dir, full path (auth, validation, reserve, relay, settle, usage record)');
    notes.push('mock upstream: the real mock\'s chat answers (scripts/mock-upstream), recorded at start and served from memory by uWS (bench/fast-mock.ts), so the mock and the load generator leave the baseline room to saturate its core');
    notes.push(`pass-through: the same plumbing as Tollgate where it is not a gateway feature: the same light abort handle, undici's callback form, and the workers' V8 flags (${WORKER_V8_FLAGS.join(' ')})`);
    notes.push('scenarios run interleaved: each scenario against (a), (b), (c) in turn; the pass-through and Tollgate both stay up, only one is loaded at a time');
    notes.push('target CPU: CPU time of the target\'s processes during the measured seconds (100% = one core; the gateway has one core); '
      + 'below ~90% at 50 connections the target was not the bottleneck, the mock or the load generator was');
    if (options.idle > 0) notes.push(`the ${options.idle} idle connections are opened before Tollgate's first throughput scenario and held until its last one ended`);
    if (alternated.length > 0) {
      notes.push(`throughput checks: the median of ${options.rounds} rounds per scenario after the single pass, each round ${options.roundSeconds} s of the pass-through and of Tollgate `
        + `(after ${ROUND_WARMUP_SECONDS} s of warm-up each), in turn, the order flipped every round; the idle connections are closed by then`);
    }
    const evaluated = evaluateTargets(targets, alternated);
    notes.push(...evaluated.notes);
    return { targets, checks: evaluated.checks, alternated };
  } finally {
    await children.stop(tollgate.supervisorPid);
    tollgate.cleanup();
  }
}

async function external(options: Options, notes: string[]): Promise<{ targets: TargetRun[]; checks: Check[] }> {
  const model = options.model ?? 'gpt-4o-mini';
  const endpoint = chatEndpoint(options.target!, options.key);
  const run = newRun('target', `target ${new URL(endpoint.url).host}`, endpoint.url);
  notes.push(`target mode: only ${endpoint.url} (model ${model}) was measured; no mock, no pass-through baseline, so no ratios or PASS/FAIL targets`);
  const origin = new URL(endpoint.url).origin;
  await measureAll([{ run, endpoint, idle: { count: options.idle, url: origin } }], { options, scenarioList: scenarios(options.connections), model });
  return { targets: [run], checks: [] };
}

async function soak(options: Options, placement: Placement, children: ChildProcesses, notes: string[]): Promise<Pick<RunReport, 'targets' | 'checks' | 'soak'>> {
  const mock = await startMock(children, placement, options.chunks);
  const tollgate = await startTollgate(children, placement, mock.url, 1_000_000, options.profileDir);
  try {
    const endpoint = chatEndpoint(tollgate.url, tollgate.key);
    await checkEndpoint(endpoint, BENCH_MODEL);
    log(`soak: ${options.requests.toLocaleString('en-US')} requests, ${options.connections} connections, at most ${options.maxSeconds} s`);
    const result = await runSoak(endpoint, {
      requests: options.requests, connections: options.connections, maxSeconds: options.maxSeconds, model: BENCH_MODEL,
      workerPid: () => tollgate.workerPids()[0], onProgress: log,
    });
    const supervisor = readMemory(tollgate.supervisorPid);
    const run = newRun('tollgate', '(c) Tollgate', tollgate.url);
    run.memory = [{ process: 'worker (peak during the soak)', peakKb: result.peakRssKb }];
    if (supervisor) run.memory.push({ process: 'supervisor', peakKb: supervisor.peakKb });
    await children.stop(tollgate.supervisorPid);
    notes.push(`soak: alternating non-stream and stream requests through Tollgate (1 worker) and the mock, ${options.connections} connections`);
    return { targets: [run], checks: soakChecks(result), soak: result };
  } finally {
    tollgate.cleanup();
  }
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const options = parseOptions(argv);
  if (options.micro) {
    await runMicro();
    return;
  }
  const startedAt = new Date().toISOString();
  const notes: string[] = [];
  const loadAtStart = loadavg()[0];
  if (options.profile && !options.target) {
    options.profileDir = join(RESULTS_DIR, 'profiles', startedAt.replace(/[:.]/g, '-'));
    mkdirSync(options.profileDir, { recursive: true });
    notes.push(`profiled run (node --cpu-prof on Tollgate): its numbers include the profiler's overhead; profiles in ${options.profileDir}`);
  }
  const placement: Placement = options.target && !options.clientCpus
    ? { pinned: false, gatewayCpus: '', clientCpus: '', description: 'load generator not pinned (target mode: the endpoint runs outside this benchmark; pass --client-cpus to pin it)' }
    : choosePlacement({ gatewayCpus: options.gatewayCpus, clientCpus: options.clientCpus });
  if (options.target && options.clientCpus) placement.description = `load generator on CPU ${placement.clientCpus}; the target's placement is its own`;
  pinSelf(placement);
  if (!placement.pinned) log(`warning: ${placement.description}`);

  const fileLimit = openFileLimit();
  // each idle connection is one descriptor here and one in the gateway worker; keep room for the rest
  const idleCap = Math.max(0, fileLimit - 1000);
  if (options.idle > idleCap) {
    notes.push(`idle connections capped at ${idleCap} (asked ${options.idle}): ulimit -n is ${fileLimit}; raise it (ulimit -n 20000) for the full count`);
    options.idle = idleCap;
  }

  const children = new ChildProcesses(placement);
  let interrupted = false;
  const interrupt = (signal: string) => {
    if (interrupted) return;
    interrupted = true;
    log(`${signal}: stopping the benchmark's processes`);
    children.stopAll(3_000).finally(() => process.exit(130));
  };
  process.on('SIGINT', () => interrupt('SIGINT'));
  process.on('SIGTERM', () => interrupt('SIGTERM'));

  try {
    const kind: RunReport['kind'] = options.soak ? 'soak' : options.target ? 'target' : 'compare';
    const measured: Pick<RunReport, 'targets' | 'checks' | 'soak' | 'alternated'> = kind === 'soak' ? await soak(options, placement, children, notes)
      : kind === 'target' ? await external(options, notes)
        : await compare(options, placement, children, notes);
    const loadAtEnd = loadavg()[0];
    notes.push(`load average (1 min) at start ${loadAtStart.toFixed(2)}, at end ${loadAtEnd.toFixed(2)} (the end value includes the benchmark itself)${loadAtStart > 0.5
      ? ': other processes were using the CPUs when the run started, so the numbers are noisier than on an idle machine' : ''}`);
    const settings: RunReport['settings'] = kind === 'soak'
      ? { requests: options.requests, connections: options.connections, 'max seconds': options.maxSeconds, 'mock chunks': options.chunks }
      : {
        'measured s': options.duration, 'warm-up s': options.warmup, 'throughput connections': options.connections,
        ...(kind === 'compare' ? { 'alternated rounds': options.rounds, 'round s': options.roundSeconds } : {}),
        'idle connections': options.idle, 'TTFB requests': options.ttfbRequests, ...(kind === 'compare' ? { 'mock chunks': options.chunks } : {}),
        pipelining: 1, 'load generator': 'autocannon 9 (in-process), latency from every response',
      };
    for (const line of children.unexpectedExits) notes.push(`WARNING: ${line}; the numbers after it are not valid`);
    const profile = options.profileDir ? summarizeProfiles(options.profileDir)[0] : undefined;
    const report: RunReport = {
      kind, startedAt, command: commandLine(argv), machine: describeMachine(), placement: placement.description, settings,
      scenarios: kind === 'soak' ? [] : scenarios(options.connections), targets: measured.targets, checks: measured.checks,
      notes, ...(measured.soak ? { soak: measured.soak } : {}), ...(measured.alternated?.length ? { alternated: measured.alternated } : {}), ...(profile ? { profile } : {}),
    };
    const markdown = renderMarkdown(report);
    const written = writeResults(report, markdown);
    process.stdout.write(`${markdown}\n`);
    for (const line of checkLines(report.checks)) process.stdout.write(`${line}\n`);
    process.stdout.write(`\nwritten: ${written.json}\n         ${written.markdown}\n`);
  } finally {
    await children.stopAll();
  }
}

if (require.main === module) {
  main().then(() => process.exit(0), (error: unknown) => {
    process.stderr.write(`bench: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  });
}
