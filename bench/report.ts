// The benchmark's output: the machine it ran on, the measured table, the targets of issue 6 as
// PASS/FAIL lines with the measured ratio, written as JSON and Markdown under bench/results/.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, release } from 'node:os';
import { join, resolve } from 'node:path';
import { renderProfile, type ProfileSummary } from './profile';
import type { DeploymentMemory, OpenStreamsReport } from './memory';
import { EARLY_CLOSE_MS, type FirstByteResult, type IdleReport, type LoadResult, type Scenario, type ScenarioId } from './load';

/** bench/results/ of the source tree (this file runs from dist/bench/). */
export const RESULTS_DIR = resolve(__dirname, '..', '..', 'bench', 'results');

export interface Machine { cpu: string; cores: number; node: string; kernel: string; commit: string }

export function describeMachine(): Machine {
  let cpu = 'unknown';
  try {
    const match = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (match) cpu = match[1].trim();
  } catch { /* not Linux */ }
  let commit = 'unknown';
  try {
    const root = resolve(__dirname, '..', '..');
    commit = execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = execFileSync('git', ['-C', root, 'status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    if (dirty) commit += ' (with uncommitted changes)';
  } catch { /* not a git checkout */ }
  return { cpu, cores: cpus().length, node: process.version, kernel: `${process.platform} ${release()}`, commit };
}

export interface TargetRun {
  id: 'mock' | 'passthrough' | 'tollgate' | 'target';
  label: string;
  url: string;
  scenarios: Partial<Record<ScenarioId, LoadResult>>;
  firstByte?: FirstByteResult;
  /** peak RSS per process of this target, KiB */
  memory: { process: string; peakKb: number }[];
  idle?: IdleReport;
}

export interface Check { name: string; measured: string; target: string; pass: boolean }

/**
 * A throughput scenario measured again after the single pass, in short rounds with the pass-through
 * and Tollgate alternated (their order flipped each round). A single pass of each target compares
 * two moments of a shared machine; the median of alternated rounds compares the targets.
 */
/** `start`: which start of the two systems a round measured (0: the run's own; long-stream scenarios spread their rounds over several) */
export interface AlternatedRounds { scenario: ScenarioId; rounds: { passthrough: LoadResult; tollgate: LoadResult; start?: number }[] }

export interface SoakReport {
  requestedRequests: number;
  completedRequests: number;
  ok: number;
  failed: number;
  /** non-2xx answers by status */
  failedStatuses: Record<string, number>;
  /** request errors (timeouts, resets) by code */
  errors: Record<string, number>;
  seconds: number;
  requestsPerSecond: number;
  checkpointRequests: number;
  checkpointRssKb: number;
  finalRssKb: number;
  finalAnonKb: number;
  checkpointAnonKb: number;
  peakRssKb: number;
  /** one sample per second: seconds since start, requests done, worker RSS KiB */
  samples: { seconds: number; requests: number; rssKb: number; anonKb: number }[];
  stoppedByTimeLimit: boolean;
}

export interface RunReport {
  kind: 'compare' | 'target' | 'soak';
  startedAt: string;
  command: string;
  machine: Machine;
  placement: string;
  settings: Record<string, number | string | boolean>;
  scenarios: Scenario[];
  targets: TargetRun[];
  checks: Check[];
  notes: string[];
  soak?: SoakReport;
  /** the busiest Tollgate process's CPU profile (with --profile) */
  profile?: ProfileSummary;
  /** the throughput scenarios again, pass-through and Tollgate alternated (compare runs with --rounds) */
  alternated?: AlternatedRounds[];
  /** RSS per open stream, pass-through and Tollgate */
  openStreams?: OpenStreamsReport[];
  /** idle RSS of Tollgate deployments */
  deployments?: DeploymentMemory[];
}

/** KiB of worker RSS an open live stream may add */
export const MAX_KB_PER_OPEN_STREAM = 32;
/** idle RSS of a 1-worker deployment with the low-memory setting (`low_memory: true`), MiB */
export const MAX_IDLE_DEPLOYMENT_MIB = 120;

/** The memory targets: RSS per open stream of Tollgate's worker, idle RSS of a 1-worker low-memory deployment. */
export function evaluateMemory(openStreams: OpenStreamsReport[], deployments: DeploymentMemory[]): Check[] {
  const checks: Check[] = [];
  // the first Tollgate entry is the default setting; the others are shown beside it
  const ours = openStreams.find((entry) => entry.target.startsWith('(c)'));
  const others = openStreams.filter((entry) => entry !== ours);
  if (ours) {
    checks.push({
      name: `worker RSS per open live stream, ${number(ours.streams)} streams`,
      measured: `${number(ours.perStreamKb, 1)} KiB (${ours.target}: ${mib(ours.idleKb)} before, ${mib(ours.peakKb)} at the peak, ${number(ours.maxOpen)} open at most)`
        + others.map((entry) => `; ${entry.target} ${number(entry.perStreamKb, 1)} KiB`).join(''),
      target: `≤ ${MAX_KB_PER_OPEN_STREAM} KiB, all ${number(ours.streams)} open at once`,
      pass: ours.perStreamKb <= MAX_KB_PER_OPEN_STREAM && ours.maxOpen === ours.streams,
    });
    const failed = openStreams.filter((entry) => entry.failed > 0 || entry.unfinished > 0);
    checks.push({
      name: 'no failed call in the memory scenario',
      measured: failed.length === 0 ? `${openStreams.map((entry) => `${entry.target} ${number(entry.completed)} completed`).join(', ')}`
        : failed.map((entry) => `${entry.target}: ${entry.failed} failed ${JSON.stringify(entry.failures)}, ${entry.unfinished} unfinished`).join('; '),
      target: '0 failed calls', pass: failed.length === 0,
    });
  }
  const small = deployments.find((entry) => entry.workers === 1 && entry.lowMemory);
  if (small) {
    checks.push({
      name: `idle RSS of a 1-worker deployment (supervisor + worker), low_memory: true (worker_semi_space_mb ${small.workerSemiSpaceMb})`,
      measured: `${mib(small.rssKb)} (${small.processes.map((entry) => `${entry.role} ${mib(entry.rssKb)}`).join(', ')}; PSS ${mib(small.pssKb)})`,
      target: `≤ ${MAX_IDLE_DEPLOYMENT_MIB} MiB`, pass: small.rssKb <= MAX_IDLE_DEPLOYMENT_MIB * 1024,
    });
  }
  return checks;
}

const number = (value: number, digits = 0) => value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const ms = (value: number | undefined) => (value === undefined ? '–' : number(value, 3));
const mib = (kib: number) => `${number(kib / 1024, 1)} MiB`;
const percent = (ratio: number) => `${number(ratio * 100, 1)}%`;

/** The middle value (the mean of the two middle ones for an even count); NaN for none. */
export function median(values: number[]): number {
  const sorted = [...values].sort((left, right) => left - right);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** The throughput scenarios checked on CPU per call, with their minimum ratio (pass-through ÷ Tollgate). */
export const CPU_CHECKS: { id: ScenarioId; label: string; minimum: number }[] = [
  { id: 'chat-50', label: 'non-stream', minimum: 0.8 },
  // issue 6's target for the stream in one HTTP chunk; issue 17's for every stream shape models send
  { id: 'stream-50', label: 'stream in one HTTP chunk', minimum: 0.75 },
  { id: 'burst-50', label: 'stream burst', minimum: 0.8 },
  { id: 'per-turn-50', label: 'stream per-turn', minimum: 0.8 },
  { id: 'live', label: 'stream live', minimum: 0.8 },
  { id: 'messages-live', label: 'messages stream live', minimum: 0.8 },
];

/** Ratios reported beside the checks, with no target: coding agents' large requests. */
export const CPU_REPORTS: { id: ScenarioId; label: string }[] = [
  { id: 'agent-20', label: "a coding agent's 29 KB chat request" },
  { id: 'claude-code-20', label: "Claude Code's 115 KB messages request" },
];

/** CPU time of the target's processes per completed call, µs (null without CPU figures). */
export function cpuPerCallUs(result: LoadResult): number | null {
  if (result.serverCpuSeconds != null && result.ok > 0) return (result.serverCpuSeconds * 1e6) / result.ok;
  if (result.serverCpuPercent != null && result.requestsPerSecond > 0) return ((result.serverCpuPercent / 100) / result.requestsPerSecond) * 1e6;
  return null;
}

const microseconds = (value: number) => `${number(value, value < 100 ? 1 : 0)} µs`;
const ratioText = (ratio: number) => number(ratio, 2);

/** pass-through ÷ Tollgate on CPU per call when both have CPU figures, else Tollgate ÷ pass-through on raw req/s. */
function describeRatio(ours: LoadResult, base: LoadResult): { ratio: number; oursUs: number | null; baseUs: number | null; text: string } {
  const oursUs = cpuPerCallUs(ours);
  const baseUs = cpuPerCallUs(base);
  const raw = base.requestsPerSecond > 0 ? ours.requestsPerSecond / base.requestsPerSecond : 0;
  if (oursUs !== null && baseUs !== null) {
    return {
      ratio: baseUs / oursUs, oursUs, baseUs,
      text: `${ratioText(baseUs / oursUs)} (${microseconds(baseUs)} ÷ ${microseconds(oursUs)} per call; `
        + `req/s ${number(base.requestsPerSecond)} and ${number(ours.requestsPerSecond)} at ${number(base.serverCpuPercent ?? 0)}% and ${number(ours.serverCpuPercent ?? 0)}% CPU)`,
    };
  }
  return { ratio: raw, oursUs: null, baseUs: null, text: `${percent(raw)} of the pass-through's req/s (${number(ours.requestsPerSecond)} ÷ ${number(base.requestsPerSecond)} req/s)` };
}

/**
 * The issue's targets, from a run against all three targets. With alternated rounds of a throughput
 * scenario, its check is their median ratio; the single pass is shown next to it.
 */
export function evaluateTargets(targets: TargetRun[], alternated: AlternatedRounds[] = []): { checks: Check[]; notes: string[] } {
  const byId = new Map(targets.map((target) => [target.id, target]));
  const mock = byId.get('mock');
  const baseline = byId.get('passthrough');
  const tollgate = byId.get('tollgate');
  const checks: Check[] = [];
  const notes: string[] = [];
  if (!mock || !baseline || !tollgate) return { checks, notes };

  // Throughput is compared as CPU time per call: the CPU time of each target's own processes (all
  // their threads, from /proc) over the calls it completed, the pass-through's ÷ Tollgate's. On two
  // cores the mock and the load generator share the other one and can run out of CPU before a fast
  // target does: its raw req/s is then the rig's limit, not its own, and a raw ratio would flatter
  // Tollgate. CPU per call measures both on what they cost. Without CPU figures (an external
  // --target) the raw req/s ratio is all there is.
  const clean = (result: LoadResult) => result.non2xx === 0 && result.errors === 0;
  /** The ratio of a scenario: the median of its alternated rounds when it had them, else its single pass. */
  const measure = (id: ScenarioId, ours: LoadResult, base: LoadResult) => {
    const single = describeRatio(ours, base);
    const rounds = alternated.find((entry) => entry.scenario === id)?.rounds ?? [];
    let measured = single;
    let roundsClean = true;
    if (rounds.length > 0) {
      const ratios = rounds.map((round) => describeRatio(round.tollgate, round.passthrough));
      const middle = median(ratios.map((entry) => entry.ratio));
      const middleOurs = median(ratios.map((entry) => entry.oursUs ?? NaN));
      const middleBase = median(ratios.map((entry) => entry.baseUs ?? NaN));
      roundsClean = rounds.every((round) => clean(round.tollgate) && clean(round.passthrough));
      const perCall = Number.isFinite(middleOurs) && Number.isFinite(middleBase) ? ` (CPU per call: pass-through ${microseconds(middleBase)}, Tollgate ${microseconds(middleOurs)}, medians)` : '';
      const starts = new Set(rounds.map((round) => round.start ?? 0)).size;
      measured = {
        ratio: middle, oursUs: null, baseUs: null,
        text: `${ratioText(middle)}${perCall}, median of ${rounds.length} alternated rounds${starts > 1 ? ` over ${starts} starts of each` : ''} `
          + `(${ratioText(Math.min(...ratios.map((entry) => entry.ratio)))}–${ratioText(Math.max(...ratios.map((entry) => entry.ratio)))}); single pass ${single.text}`,
      };
    }
    return { measured, roundsClean };
  };
  for (const { id, label, minimum } of CPU_CHECKS) {
    const ours = tollgate.scenarios[id];
    const base = baseline.scenarios[id];
    if (!ours || !base) continue;
    const { measured, roundsClean } = measure(id, ours, base);
    checks.push({
      name: `${label}: CPU per call, pass-through ÷ Tollgate`, measured: measured.text,
      target: `≥ ${ratioText(minimum)}`, pass: measured.ratio >= minimum && clean(ours) && clean(base) && roundsClean,
    });
    if (base.serverCpuPercent !== null && base.serverCpuPercent < 90 && id !== 'live' && id !== 'messages-live') {
      notes.push(`${label}: the pass-through used only ${number(base.serverCpuPercent)}% of its core, so the mock and load generator `
        + `(sharing the other core) limited its req/s; the check compares CPU time per call, which does not depend on it`);
    }
    const ceiling = mock.scenarios[id];
    if (ceiling && ceiling.requestsPerSecond > 0) notes.push(`${label}, req/s of the pass-through ÷ mock direct: ${percent(base.requestsPerSecond / ceiling.requestsPerSecond)}`);
  }

  for (const { id, label } of CPU_REPORTS) {
    const ours = tollgate.scenarios[id];
    const base = baseline.scenarios[id];
    if (ours && base) notes.push(`${label} (reported, no target): CPU per call, pass-through ÷ Tollgate ${measure(id, ours, base).measured.text}`);
  }

  const failedCalls: string[] = [];
  const countFailures = (where: string, result: LoadResult | undefined) => {
    if (result && !clean(result)) failedCalls.push(`${where}: ${result.non2xx} non-2xx, ${result.errors} errors${result.failures ? ` ${JSON.stringify(result.failures)}` : ''}`);
  };
  for (const target of [baseline, tollgate]) {
    for (const [id, result] of Object.entries(target.scenarios)) countFailures(`${target.label} ${id}`, result);
  }
  for (const entry of alternated) {
    entry.rounds.forEach((round, index) => {
      countFailures(`(b) pass-through ${entry.scenario} round ${index + 1}`, round.passthrough);
      countFailures(`(c) Tollgate ${entry.scenario} round ${index + 1}`, round.tollgate);
    });
  }
  checks.push({
    name: 'no failed call in any scenario (pass-through and Tollgate, single pass and rounds)',
    measured: failedCalls.length === 0 ? '0 failed calls' : failedCalls.join('; '), target: '0 failed calls', pass: failedCalls.length === 0,
  });

  const added = (id: ScenarioId, label: string) => {
    const ours = tollgate.scenarios[id];
    const direct = mock.scenarios[id];
    const base = baseline.scenarios[id];
    if (!ours || !direct) return;
    const p50 = ours.latencyMs.p50 - direct.latencyMs.p50;
    const p99 = ours.latencyMs.p99 - direct.latencyMs.p99;
    checks.push({ name: `${label}, 1 connection: added p50 latency over the mock`, measured: `${ms(p50)} ms`, target: '≤ 0.35 ms', pass: p50 <= 0.35 });
    checks.push({ name: `${label}, 1 connection: added p99 latency over the mock`, measured: `${ms(p99)} ms`, target: '≤ 1 ms', pass: p99 <= 1 });
    if (base) notes.push(`${label}, 1 connection: the pass-through adds p50 ${ms(base.latencyMs.p50 - direct.latencyMs.p50)} ms, p99 ${ms(base.latencyMs.p99 - direct.latencyMs.p99)} ms over the mock`);
  };
  added('chat-1', 'non-stream');
  added('stream-1', 'stream (whole response)');

  if (tollgate.firstByte && mock.firstByte) {
    const p50 = tollgate.firstByte.p50 - mock.firstByte.p50;
    checks.push({
      name: 'stream: added time to first byte (p50) over the mock',
      // the p99s side by side, not subtracted: over 2,000 samples the mock's own p99 is mostly noise
      measured: `${ms(p50)} ms (p99: Tollgate ${ms(tollgate.firstByte.p99)} ms, mock ${ms(mock.firstByte.p99)} ms)`,
      target: '≤ 0.5 ms', pass: p50 <= 0.5 && tollgate.firstByte.bad === 0,
    });
    if (baseline.firstByte) notes.push(`stream: the pass-through adds ${ms(baseline.firstByte.p50 - mock.firstByte.p50)} ms to the first byte (p50)`);
  }

  const idle = tollgate.idle;
  if (idle) {
    // A server closing a keep-alive connection after its idle timeout is ordinary HTTP, not an error;
    // a reset, a refusal, a missing answer or a close before the timeout is.
    const pass = idle.answered === idle.requested && idle.errors === 0 && idle.closedEarly === 0;
    const closes = idle.closedByServer === 0 ? 'none closed by the server'
      : `${number(idle.closedByServer)} closed cleanly by the server after ≥ ${number(idle.shortestIdleBeforeCloseSeconds ?? 0, 1)} s idle (${idle.closedEarly} before ${EARLY_CLOSE_MS / 1000} s)`;
    checks.push({
      name: 'idle keep-alive connections during the throughput scenarios',
      measured: `${number(idle.answered)} of ${number(idle.requested)} answered, ${idle.errors} errors${idle.errors ? ` ${JSON.stringify(idle.errorCodes)}` : ''}; `
        + `${number(idle.stillOpen)} still open after ${number(idle.openSeconds, 0)} s; ${closes}`,
      target: `${number(idle.requested)} open, 0 errors`, pass,
    });
    if (idle.closedByServer > 0) notes.push(`idle connections: uWS closes an HTTP connection idle for 10 s (a constant of uWS, not configurable in uWS.js, swept every 4 s); connections closed that way count as held, not as errors`);
  }
  return { checks, notes };
}

export function checkLines(checks: Check[]): string[] {
  return checks.map((check) => `${check.pass ? 'PASS' : 'FAIL'}  ${check.name}: ${check.measured} (target ${check.target})`);
}

export function renderMarkdown(report: RunReport): string {
  const lines: string[] = [];
  const title = report.kind === 'soak' ? 'Tollgate soak benchmark' : report.kind === 'target' ? 'Benchmark of an external endpoint' : 'Tollgate benchmark';
  lines.push(`# ${title}`, '');
  lines.push(`- Run: ${report.startedAt}, commit ${report.machine.commit}`);
  lines.push(`- Machine: ${report.machine.cpu}, ${report.machine.cores} cores, ${report.machine.kernel}, Node ${report.machine.node}`);
  lines.push(`- Command: \`${report.command}\``);
  lines.push(`- CPU placement: ${report.placement}`);
  const settings = Object.entries(report.settings).map(([name, value]) => `${name} ${value}`).join(', ');
  lines.push(`- Settings: ${settings}`);
  for (const note of report.notes) lines.push(`- ${note}`);
  lines.push('');

  if (report.targets.some((target) => Object.keys(target.scenarios).length > 0)) {
    lines.push('| scenario | target | req/s | CPU µs per call | CPU µs per event | p50 ms | p90 ms | p99 ms | failed | target CPU | load-gen CPU |',
      '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const scenario of report.scenarios) {
      for (const target of report.targets) {
        const result = target.scenarios[scenario.id];
        if (!result) continue;
        const perCall = cpuPerCallUs(result);
        const perEvent = perCall !== null && scenario.events ? number(perCall / scenario.events, 2) : '–';
        const latency = result.latencyMs.count > 0 ? `${ms(result.latencyMs.p50)} | ${ms(result.latencyMs.p90)} | ${ms(result.latencyMs.p99)}` : '– | – | –';
        lines.push(`| ${scenario.label} | ${target.label} | ${number(result.requestsPerSecond)} | ${perCall === null ? '–' : number(perCall, 1)} | ${perEvent} | ${latency} | ${result.errors + result.non2xx} | ${result.serverCpuPercent === null ? '–' : `${number(result.serverCpuPercent)}%`} | ${number(result.clientCpuPercent)}% |`);
      }
    }
    lines.push('');
  }

  if (report.alternated && report.alternated.length > 0) {
    lines.push('Alternated rounds (the pass-through and Tollgate in turn, the order flipped each round; the checks use the median ratio):', '');
    lines.push('| scenario | round | (b) pass-through req/s | CPU µs per call | (c) Tollgate req/s | CPU µs per call | pass-through ÷ Tollgate, CPU per call |', '|---|---:|---:|---:|---:|---:|---:|');
    for (const entry of report.alternated) {
      const label = report.scenarios.find((scenario) => scenario.id === entry.scenario)?.label ?? entry.scenario;
      entry.rounds.forEach((round, index) => {
        const base = cpuPerCallUs(round.passthrough);
        const ours = cpuPerCallUs(round.tollgate);
        const ratio = base !== null && ours !== null ? ratioText(base / ours) : `${percent(round.tollgate.requestsPerSecond / Math.max(1, round.passthrough.requestsPerSecond))} of req/s`;
        const cpu = (value: number | null) => (value === null ? '–' : number(value, 1));
        lines.push(`| ${label} | ${index + 1}${round.start ? ` (start ${round.start + 1})` : ''} | ${number(round.passthrough.requestsPerSecond)} | ${cpu(base)} | ${number(round.tollgate.requestsPerSecond)} | ${cpu(ours)} | ${ratio} |`);
      });
    }
    lines.push('');
  }

  if (report.openStreams && report.openStreams.length > 0) {
    lines.push('Memory per open stream (a fresh process, live streams opened at once, RSS of the process that carries them; "warmed": a fresh process that served a few seconds of load first):', '');
    lines.push('| target | streams | open at most | RSS before | RSS at the peak | per open stream | completed | failed | unfinished |', '|---|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const entry of report.openStreams) {
      lines.push(`| ${entry.target} | ${number(entry.streams)} | ${number(entry.maxOpen)} | ${mib(entry.idleKb)} | ${mib(entry.peakKb)} | ${number(entry.perStreamKb, 1)} KiB | ${number(entry.completed)} | ${entry.failed} | ${entry.unfinished ?? 0} |`);
    }
    lines.push('');
  }
  if (report.deployments && report.deployments.length > 0) {
    lines.push('Idle RSS of a Tollgate deployment (supervisor + workers, all threads; after one call of each kind, once its RSS held steady for 2 s):', '');
    lines.push('| workers | low_memory | worker_semi_space_mb | RSS, all processes | PSS, all processes | processes (RSS, threads) |', '|---:|---|---:|---:|---:|---|');
    for (const entry of report.deployments) {
      const processes = entry.processes.map((process) => `${process.role} ${mib(process.rssKb)}, ${process.threads} threads`).join('; ');
      lines.push(`| ${entry.workers} | ${entry.lowMemory ? 'true' : 'false'} | ${entry.workerSemiSpaceMb} | ${mib(entry.rssKb)} | ${mib(entry.pssKb)} | ${processes} |`);
    }
    lines.push('');
  }

  const firstBytes = report.targets.filter((target) => target.firstByte);
  if (firstBytes.length > 0) {
    lines.push('Time to first streamed byte (1 connection, one request at a time):', '');
    lines.push('| target | requests | p50 ms | p90 ms | p99 ms | bad answers |', '|---|---:|---:|---:|---:|---:|');
    for (const target of firstBytes) {
      const result = target.firstByte!;
      lines.push(`| ${target.label} | ${result.count} | ${ms(result.p50)} | ${ms(result.p90)} | ${ms(result.p99)} | ${result.bad} |`);
    }
    lines.push('');
  }

  const memory = report.targets.flatMap((target) => target.memory.map((entry) => ({ target: target.label, ...entry })));
  if (memory.length > 0) {
    lines.push('Peak RSS (VmHWM, and the RSS sampled every 0.5 s):', '');
    lines.push('| target | process | peak RSS |', '|---|---|---:|');
    for (const entry of memory) lines.push(`| ${entry.target} | ${entry.process} | ${mib(entry.peakKb)} |`);
    lines.push('');
  }

  if (report.soak) {
    const soak = report.soak;
    lines.push('| soak | value |', '|---|---:|');
    lines.push(`| requests done (of ${number(soak.requestedRequests)}) | ${number(soak.completedRequests)} (${number(soak.failed)} failed) |`);
    lines.push(`| time, rate | ${number(soak.seconds, 0)} s, ${number(soak.requestsPerSecond)} req/s |`);
    lines.push(`| worker RSS after ${number(soak.checkpointRequests)} requests | ${mib(soak.checkpointRssKb)} (anonymous ${mib(soak.checkpointAnonKb)}) |`);
    lines.push(`| worker RSS at the end | ${mib(soak.finalRssKb)} (anonymous ${mib(soak.finalAnonKb)}) |`);
    lines.push(`| worker peak RSS | ${mib(soak.peakRssKb)} |`);
    if (soak.stoppedByTimeLimit) lines.push('| stopped by the time limit | yes |');
    lines.push('');
    // the curve: RSS at each tenth of the run, so levelling off (or not) is visible at a glance
    const curve: string[] = [];
    for (let tenth = 1; tenth <= 10; tenth += 1) {
      const wanted = (soak.completedRequests * tenth) / 10;
      const sample = soak.samples.find((entry) => entry.requests >= wanted) ?? soak.samples.at(-1);
      if (sample && !curve.includes(`${sample.seconds}`)) {
        curve.push(`${sample.seconds}`);
        lines.push(`${curve.length === 1 ? '| requests done | worker RSS | anonymous |\n|---:|---:|---:|\n' : ''}| ${number(sample.requests)} | ${mib(sample.rssKb)} | ${mib(sample.anonKb)} |`);
      }
    }
    if (curve.length > 0) lines.push('');
  }

  if (report.checks.length > 0) {
    lines.push('| check | measured | target | result |', '|---|---|---|---|');
    for (const check of report.checks) lines.push(`| ${check.name} | ${check.measured} | ${check.target} | ${check.pass ? 'PASS' : '**FAIL**'} |`);
    lines.push('');
  }
  if (report.profile) lines.push(renderProfile(report.profile), '');
  return lines.join('\n');
}

/** Writes `<timestamp>.json` and `latest.md`; returns their paths. */
export function writeResults(report: RunReport, markdown: string): { json: string; markdown: string } {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const stamp = report.startedAt.replace(/[:.]/g, '-');
  // a profiled run carries the profiler's overhead: it never replaces the table the README shows
  const variant = report.profile ? `${report.kind}-profile` : report.kind;
  const suffix = variant === 'compare' ? '' : `-${variant}`;
  const jsonPath = join(RESULTS_DIR, `${stamp}${suffix}.json`);
  const markdownPath = join(RESULTS_DIR, variant === 'compare' ? 'latest.md' : `latest-${variant}.md`);
  writeFileSync(jsonPath, `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(markdownPath, `${markdown}\n`);
  return { json: jsonPath, markdown: markdownPath };
}
