// `npm run bench`: Tollgate against its physical baseline in one run (DESIGN §6, issue 6).
//   default        (a) mock upstream direct, (b) minimal uWS + undici pass-through, (c) Tollgate
//   --target URL --key KEY [--model M]   the same scenarios against any OpenAI-compatible endpoint
//   --soak [--requests N]                N mixed requests through Tollgate, worker RSS watched
//   --micro                              tinybench micro benchmarks (bench/micro.ts)
//   --in-process                         the gateway's own work per chat call, no network (bench/in-process.ts)
//   --cluster                            one node on PostgreSQL + Redis beside one on LMDB (bench/cluster.ts)
//   --runtimes                           Node + uWS, Node + node:http and Bun + node:http (bench/runtimes.ts)
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { BENCH_MESSAGES_MODEL, checkEndpoint, chatBody, IdleConnections, isThroughput, measureFirstByte, runLoad, runScenario, scenarios, type Endpoint, type Scenario, type ScenarioOptions } from './load';
import { deploymentMemory, idleDeploymentMemory, measureOpenStreams, type DeploymentMemory, type OpenStreamsReport } from './memory';
import { ChildProcesses, choosePlacement, MemorySampler, pinSelf, readMemory, type Placement } from './processes';
import {
  checkLines, describeMachine, evaluateMemory, evaluateTargets, renderMarkdown, RESULTS_DIR, writeResults, type AlternatedRounds, type Check, type RunReport, type TargetRun,
} from './report';
import { commandLine, parseOptions, type Options } from './options';
import { runMicro } from './micro';
import { runInProcessChild } from './in-process';
import { runCluster } from './cluster';
import { runRuntimes } from './runtimes';
import { summarizeProfiles } from './profile';
import { runSoak, soakChecks } from './soak';
import { DEFAULT_WORKER_SEMI_SPACE_MB, LOW_MEMORY_WORKER_SEMI_SPACE_MB } from '../src/config';
import { WORKER_V8_FLAGS } from '../src/supervisor';
import { BENCH_MODEL, startMock, startPassthroughProcess, startTollgate, type Tollgate } from './targets';

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

/**
 * Connections of the start-up warm-up. A process's first seconds under load are its JIT's, and a
 * 1-connection scenario run first measured the compiler's tail latency, not the gateway's
 * (bench/README.md, "Start-up warm-up").
 */
const START_WARMUP_CONNECTIONS = 8;

interface Subject { run: TargetRun; endpoint: Endpoint; idle?: { count: number; url: string }; pids?: () => number[] }

/**
 * Every scenario against every target, interleaved (scenario by scenario, target after target) so a
 * slow minute of a shared machine hits all targets alike. Idle connections of a target are opened
 * before its first throughput scenario and held until its last one has ended.
 */
async function measureAll(subjects: Subject[], measure: Measure): Promise<void> {
  const { options, scenarioList, model } = measure;
  for (const subject of subjects) await startUp(subject, measure);
  const lastThroughput = scenarioList.filter(isThroughput).at(-1);
  const open = new Map<Subject, IdleConnections>();
  try {
    for (const scenario of scenarioList) {
      for (const subject of subjects) {
        const { run, endpoint } = subject;
        if (isThroughput(scenario) && subject.idle && subject.idle.count > 0 && !open.has(subject)) {
          log(`  ${run.label}: opening ${subject.idle.count} idle keep-alive connections`);
          const idle = new IdleConnections(subject.idle.url, subject.idle.count);
          open.set(subject, idle);
          await idle.open();
        }
        log(`  ${run.label}: ${scenario.label}`);
        run.scenarios[scenario.id] = await runScenario(endpoint, model, scenario, options.duration, options.warmup, subject.pids);
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

/** A target just started: its endpoints answer, then the start-up warm-up. */
async function startUp(subject: Subject, measure: Measure): Promise<void> {
  const { options, scenarioList, model } = measure;
  await checkEndpoint(subject.endpoint, model);
  if (scenarioList.some((scenario) => scenario.dialect === 'messages')) await checkEndpoint(subject.endpoint, BENCH_MESSAGES_MODEL, 'messages');
  if (options.startWarmup > 0) {
    log(`  ${subject.run.label}: ${options.startWarmup} s of start-up warm-up`);
    for (const stream of [false, true]) await runLoad(subject.endpoint, chatBody(model, stream), START_WARMUP_CONNECTIONS, options.startWarmup / 2, 0);
  }
}

/** warm-up of a target at the start of its turn in a round: the other one had the machine before */
const ROUND_WARMUP_SECONDS = 0.5;
/** alternated rounds of a long-stream scenario, at most */
const LONG_ROUNDS = 6;
/**
 * Starts of each system a long-stream scenario's rounds are spread over. On the live shapes one
 * start of the same build settles at a cost per call up to ~10% off another's, for as long as it
 * runs (bench/README.md): the rounds of a single start measure that start, not the build.
 */
const LONG_STARTS = 3;

/** A pass-through and a Tollgate started for some rounds, and how to stop them. */
interface Pair { baseline: Subject; tollgate: Subject; stop(): Promise<void> }

/**
 * Each throughput scenario again in short rounds, the pass-through and Tollgate in turn and the
 * order flipped every round, so both meet the same moments of a shared machine. A single pass of
 * each (measureAll) moved the ratio by several points from run to run. A long-stream scenario's
 * rounds are spread over LONG_STARTS starts of each system when `freshPair` can start more: the
 * first pair is the run's own, the others are started for their rounds and stopped after them.
 */
async function alternate(baseline: Subject, tollgate: Subject, measure: Measure, freshPair?: () => Promise<Pair>): Promise<AlternatedRounds[]> {
  const { options, scenarioList, model } = measure;
  const results: AlternatedRounds[] = [];
  for (const scenario of scenarioList.filter(isThroughput)) {
    const long = scenario.windowSeconds !== undefined;
    // long streams take seconds a round (warm-up over a whole call, then the window): fewer rounds
    const count = long ? Math.min(options.rounds, LONG_ROUNDS) : options.rounds;
    const starts = long && freshPair ? Math.min(LONG_STARTS, count) : 1;
    log(`  alternated rounds: ${scenario.label}, ${count} × ${scenario.windowSeconds ?? options.roundSeconds} s each${starts > 1 ? `, over ${starts} starts of each` : ''}`);
    const measureOne = (subject: Subject) => runScenario(subject.endpoint, model, scenario, options.roundSeconds, ROUND_WARMUP_SECONDS, subject.pids);
    const rounds: AlternatedRounds['rounds'] = [];
    for (let start = 0; start < starts; start += 1) {
      const pair: Pair = start === 0 ? { baseline, tollgate, stop: () => Promise.resolve() } : await freshPair!();
      try {
        for (let round = Math.floor((start * count) / starts); round < Math.floor(((start + 1) * count) / starts); round += 1) {
          if (round % 2 === 0) {
            const passthrough = await measureOne(pair.baseline);
            rounds.push({ passthrough, tollgate: await measureOne(pair.tollgate), start });
          } else {
            const ours = await measureOne(pair.tollgate);
            rounds.push({ passthrough: await measureOne(pair.baseline), tollgate: ours, start });
          }
        }
      } finally {
        await pair.stop();
      }
    }
    results.push({ scenario: scenario.id, rounds });
  }
  return results;
}

function scenarioOptions(options: Options): ScenarioOptions {
  return { connections: options.connections, chunks: options.chunks, live: options.live };
}

/** The scenarios of this run (all, or those named by --scenarios). */
function selectedScenarios(options: Options): Scenario[] {
  const all = scenarios(scenarioOptions(options));
  if (!options.only) return all;
  const unknown = [...options.only].filter((id) => !all.some((scenario) => scenario.id === id));
  if (unknown.length > 0) throw new Error(`--scenarios: unknown ${unknown.join(', ')} (known: ${all.map((scenario) => scenario.id).join(', ')})`);
  return all.filter((scenario) => options.only!.has(scenario.id));
}

function newRun(id: TargetRun['id'], label: string, url: string): TargetRun {
  return { id, label, url, scenarios: {}, memory: [] };
}

function tollgateMemory(tollgate: Tollgate, sampler: MemorySampler): { process: string; peakKb: number }[] {
  return [...sampler.peakKb].map(([pid, peakKb]) => ({ process: pid === tollgate.supervisorPid ? `supervisor (pid ${pid})` : `worker (pid ${pid})`, peakKb }));
}

/** a young generation larger than the default, measured beside it (`worker_semi_space_mb: 32`) */
const LARGE_WORKER_SEMI_SPACE_MB = 32;

/** the memory scenario's calls and idle starts must end within this */
const MEMORY_SCENARIO_SECONDS = 60;

/**
 * The label of a memory scenario run in a warmed process: before the streams it served the start-up
 * warm-up's load (START_WARMUP_CONNECTIONS, half non-stream, half stream). Its young generation,
 * resident in full once used and not given back when idle, is then in the RSS before the streams, so
 * the figure is what an open stream adds to a worker that has served traffic.
 */
const WARMED = 'warmed';

/** The warm-up of a WARMED memory run, s (enough calls to fill a 16 MiB young generation many times). */
const MEMORY_WARMUP_SECONDS = 4;

async function warmForMemory(endpoint: Endpoint): Promise<void> {
  for (const stream of [false, true]) await runLoad(endpoint, chatBody(BENCH_MODEL, stream), START_WARMUP_CONNECTIONS, MEMORY_WARMUP_SECONDS / 2, 0);
}

/**
 * Memory per open stream: a fresh pass-through, then a fresh Tollgate of each young-generation size;
 * then the pass-through and the default Tollgate started again and WARMED first.
 */
async function openStreamScenarios(options: Options, placement: Placement, children: ChildProcesses, mockUrl: string, openStreams: OpenStreamsReport[]): Promise<void> {
  const { streams, chunks, gapMs } = options.memory;
  const body = chatBody(BENCH_MODEL, true, { shape: 'live', contentChunks: chunks, gapMs });
  const passthroughStreams = async (warmed: boolean) => {
    log(`memory: ${streams} live streams (${chunks + 4} events ${gapMs} ms apart) against a ${warmed ? 'warmed' : 'fresh'} pass-through`);
    const passthrough = await startPassthroughProcess(children, placement, mockUrl);
    try {
      const endpoint = chatEndpoint(passthrough.url);
      await checkEndpoint(endpoint, BENCH_MODEL);
      if (warmed) await warmForMemory(endpoint);
      openStreams.push(await measureOpenStreams(`(b) pass-through${warmed ? `, ${WARMED}` : ''}`, endpoint, body, streams, () => passthrough.pid, MEMORY_SCENARIO_SECONDS));
    } finally {
      await children.stop(passthrough.pid);
    }
  };
  await passthroughStreams(false);
  // the default first (the check's), on both fronts; then the low-memory young generation and a larger one beside it
  const runs: { front: 'uws' | 'node'; workerSemiSpaceMb: number; warmed?: boolean }[] = [
    { front: 'uws', workerSemiSpaceMb: DEFAULT_WORKER_SEMI_SPACE_MB }, { front: 'node', workerSemiSpaceMb: DEFAULT_WORKER_SEMI_SPACE_MB },
    { front: 'uws', workerSemiSpaceMb: LOW_MEMORY_WORKER_SEMI_SPACE_MB }, { front: 'uws', workerSemiSpaceMb: LARGE_WORKER_SEMI_SPACE_MB },
  ];
  for (const { front, workerSemiSpaceMb, warmed } of [...runs, { ...runs[0], warmed: true }]) {
    const label = `(c) Tollgate worker, ${front === 'uws' ? 'uWS' : 'node:http'}, worker_semi_space_mb ${workerSemiSpaceMb}${warmed ? `, ${WARMED}` : ''}`;
    log(`memory: ${streams} live streams against a ${warmed ? 'warmed' : 'fresh'} Tollgate (1 worker, ${front} front, worker_semi_space_mb ${workerSemiSpaceMb})`);
    const tollgate = await startTollgate(children, placement, mockUrl, { topUpUsd: 100_000, workerSemiSpaceMb, front });
    try {
      const endpoint = chatEndpoint(tollgate.url, tollgate.key);
      await checkEndpoint(endpoint, BENCH_MODEL);
      if (warmed) await warmForMemory(endpoint);
      openStreams.push(await measureOpenStreams(label, endpoint, body, streams, () => tollgate.workerPids()[0], MEMORY_SCENARIO_SECONDS));
    } finally {
      await children.stop(tollgate.supervisorPid);
      tollgate.cleanup();
    }
  }
  await passthroughStreams(true);
}

/**
 * Memory per open stream (fresh pass-through and Tollgate, `--memory-streams` live streams at once;
 * none with 0), then the idle RSS of Tollgate deployments of 1 and 2 workers, with the low-memory
 * setting and the default.
 */
async function memoryScenarios(options: Options, placement: Placement, children: ChildProcesses, mockUrl: string):
  Promise<{ openStreams: OpenStreamsReport[]; deployments: DeploymentMemory[] }> {
  const openStreams: OpenStreamsReport[] = [];
  if (options.memory.streams > 0) await openStreamScenarios(options, placement, children, mockUrl, openStreams);
  const deployments: DeploymentMemory[] = [];
  // the low-memory setting (`low_memory: true`, whose young generation is LOW_MEMORY_WORKER_SEMI_SPACE_MB) and the default
  for (const [lowMemory, workerSemiSpaceMb] of [[true, LOW_MEMORY_WORKER_SEMI_SPACE_MB], [false, DEFAULT_WORKER_SEMI_SPACE_MB]] as const) {
    for (const workers of [1, 2]) {
      log(`memory: idle deployment, ${workers} worker(s), low_memory ${lowMemory}, worker_semi_space_mb ${workerSemiSpaceMb}`);
      const idle = await startTollgate(children, placement, mockUrl, { topUpUsd: 1_000, workers, workerSemiSpaceMb, config: { low_memory: lowMemory } });
      try {
        await checkEndpoint(chatEndpoint(idle.url, idle.key), BENCH_MODEL);
        deployments.push(await idleDeploymentMemory(() => deploymentMemory(idle.supervisorPid, idle.workerPids(), workers, workerSemiSpaceMb, lowMemory)));
      } finally {
        await children.stop(idle.supervisorPid);
        idle.cleanup();
      }
    }
  }
  return { openStreams, deployments };
}

async function compare(options: Options, placement: Placement, children: ChildProcesses, notes: string[]):
  Promise<Pick<RunReport, 'targets' | 'checks' | 'alternated' | 'openStreams' | 'deployments'>> {
  const measure: Measure = { options, scenarioList: selectedScenarios(options), model: BENCH_MODEL };
  log('starting the mock upstream, the pass-through and Tollgate');
  const mock = await startMock(children, placement, options.chunks, [options.live.chunks, options.memory.chunks]);
  if (options.memoryOnly) {
    const memory = await memoryScenarios(options, placement, children, mock.url);
    notes.push('--memory-only: the memory scenarios alone');
    return { targets: [], checks: evaluateMemory(memory.openStreams, memory.deployments), alternated: [], ...memory };
  }
  const passthrough = await startPassthroughProcess(children, placement, mock.url);
  const tollgate = await startTollgate(children, placement, mock.url, { topUpUsd: 100_000, profileDir: options.profileDir });
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
    // more starts of both for the long-stream rounds: started, warmed up as the first ones were, and stopped after their rounds
    const freshPair = async (): Promise<Pair> => {
      log('  starting another pass-through and Tollgate for the next rounds');
      const otherPassthrough = await startPassthroughProcess(children, placement, mock.url);
      const otherTollgate = await startTollgate(children, placement, mock.url, { topUpUsd: 100_000 });
      const stop = async () => {
        await children.stop(otherTollgate.supervisorPid);
        otherTollgate.cleanup();
        await children.stop(otherPassthrough.pid);
      };
      try {
        const pair: Pair = {
          baseline: { run: newRun('passthrough', '(b) pass-through, another start', otherPassthrough.url), endpoint: chatEndpoint(otherPassthrough.url), pids: () => [otherPassthrough.pid] },
          tollgate: {
            run: newRun('tollgate', '(c) Tollgate, another start', otherTollgate.url), endpoint: chatEndpoint(otherTollgate.url, otherTollgate.key),
            pids: () => [otherTollgate.supervisorPid, ...otherTollgate.workerPids()],
          },
          stop,
        };
        await startUp(pair.baseline, measure);
        await startUp(pair.tollgate, measure);
        return pair;
      } catch (error) {
        await stop();
        throw error;
      }
    };
    const alternated = options.rounds > 0 ? await alternate(baselineSubject, tollgateSubject, measure, freshPair) : [];
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
    await children.stop(passthrough.pid);
    const memory = options.memory.streams > 0 ? await memoryScenarios(options, placement, children, mock.url) : undefined;
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
        + `(after ${ROUND_WARMUP_SECONDS} s of warm-up each), in turn, the order flipped every round; the idle connections are closed by then; `
        + `the long-stream scenarios' rounds (at most ${LONG_ROUNDS}) spread over ${LONG_STARTS} starts of each system: the run's own, then a fresh pass-through and a fresh Tollgate (start-up warm-up as the first) for each further share of the rounds`);
    }
    const evaluated = evaluateTargets(targets, alternated);
    notes.push(...evaluated.notes);
    const checks = [...evaluated.checks];
    if (memory) {
      notes.push(`memory per open stream: a fresh pass-through and a fresh Tollgate (1 worker, default young generation), ${options.memory.streams} live streams opened at once, `
        + 'one call per connection; RSS of the process that carries the streams (for Tollgate its worker) before them and the highest sampled every 100 ms while they were open; '
        + `"${WARMED}": started again and given ${MEMORY_WARMUP_SECONDS} s of load at ${START_WARMUP_CONNECTIONS} connections (half non-stream, half stream) first, its young generation (resident in full once used) then in the RSS before the streams: `
        + 'what an open stream adds to a worker that has served traffic (the check reads the fresh process, as the target was set)');
      notes.push('idle deployments: Tollgate started with a fresh data dir, one stream and one non-stream call, then idle until its RSS held within 1% for 2 s (2–15 s after the calls); RSS of the supervisor and every worker summed '
        + '(PSS beside it: RSS counts the pages the processes share, such as Node\'s own code, once per process)');
      checks.push(...evaluateMemory(memory.openStreams, memory.deployments));
    }
    return { targets, checks, alternated, ...(memory ?? {}) };
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
  const scenarioList = selectedScenarios(options).filter((scenario) => scenario.dialect === undefined);
  if (scenarioList.length < selectedScenarios(options).length) notes.push('target mode: the messages scenario was left out (it needs the benchmark\'s own Anthropic channel and model)');
  await measureAll([{ run, endpoint, idle: { count: options.idle, url: origin } }], { options, scenarioList, model });
  return { targets: [run], checks: [] };
}

async function soak(options: Options, placement: Placement, children: ChildProcesses, notes: string[]): Promise<Pick<RunReport, 'targets' | 'checks' | 'soak'>> {
  const mock = await startMock(children, placement, options.chunks);
  const tollgate = await startTollgate(children, placement, mock.url, { topUpUsd: 1_000_000, profileDir: options.profileDir });
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
  if (options.inProcess) {
    runInProcessChild({ seconds: options.roundSeconds, rounds: Math.max(1, options.rounds), gatewayCpus: options.gatewayCpus });
    return;
  }
  if (options.cluster) {
    const { markdown, json } = await runCluster({ ...options, rounds: Math.max(1, options.rounds), warmup: Math.min(options.warmup, 1) }, log);
    process.stdout.write(`${markdown}\nresults: ${json}\n`);
    return;
  }
  if (options.runtimes) {
    const { markdown, json } = await runRuntimes({ ...options, rounds: Math.max(1, options.rounds), warmup: options.warmup }, log);
    process.stdout.write(`${markdown}\nresults: ${json}\n`);
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
    const measured: Pick<RunReport, 'targets' | 'checks' | 'soak' | 'alternated' | 'openStreams' | 'deployments'> = kind === 'soak' ? await soak(options, placement, children, notes)
      : kind === 'target' ? await external(options, notes)
        : await compare(options, placement, children, notes);
    const loadAtEnd = loadavg()[0];
    notes.push(`load average (1 min) at start ${loadAtStart.toFixed(2)}, at end ${loadAtEnd.toFixed(2)} (the end value includes the benchmark itself)${loadAtStart > 0.5
      ? ': other processes were using the CPUs when the run started, so the numbers are noisier than on an idle machine' : ''}`);
    const settings: RunReport['settings'] = kind === 'soak'
      ? { requests: options.requests, connections: options.connections, 'max seconds': options.maxSeconds, 'mock chunks': options.chunks }
      : {
        'measured s': options.duration, 'warm-up s': options.warmup, 'start-up warm-up s': options.startWarmup, 'throughput connections': options.connections,
        ...(kind === 'compare' ? { 'alternated rounds': options.rounds, 'round s': options.roundSeconds } : {}),
        'idle connections': options.idle, 'TTFB requests': options.ttfbRequests, ...(kind === 'compare' ? { 'mock chunks': options.chunks } : {}),
        'live streams': `${options.live.connections} × ${options.live.chunks + 4} events ${options.live.gapMs} ms apart, ${options.live.seconds} s window`,
        ...(kind === 'compare' && options.memory.streams > 0
          ? { 'memory scenario': `${options.memory.streams} streams × ${options.memory.chunks + 4} events ${options.memory.gapMs} ms apart` } : {}),
        pipelining: 1, 'load generator': 'autocannon 9 (in-process), latency from every response',
      };
    for (const line of children.unexpectedExits) notes.push(`WARNING: ${line}; the numbers after it are not valid`);
    const profile = options.profileDir ? summarizeProfiles(options.profileDir)[0] : undefined;
    const report: RunReport = {
      kind, startedAt, command: commandLine(argv), machine: describeMachine(), placement: placement.description, settings,
      scenarios: kind === 'soak' ? [] : selectedScenarios(options), targets: measured.targets, checks: measured.checks,
      notes, ...(measured.soak ? { soak: measured.soak } : {}), ...(measured.openStreams ? { openStreams: measured.openStreams } : {}),
      ...(measured.deployments ? { deployments: measured.deployments } : {}), ...(measured.alternated?.length ? { alternated: measured.alternated } : {}), ...(profile ? { profile } : {}),
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
