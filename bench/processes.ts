// Child processes of the benchmark: CPU placement with taskset, start-and-wait-for-a-line, memory
// readings from /proc, and a cleanup that leaves no orphans (SIGTERM, then SIGKILL after a grace).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { readdirSync, readFileSync } from 'node:fs';

export interface Placement {
  /** taskset is used */
  pinned: boolean;
  /** CPU list of the gateway under test (Tollgate or the pass-through) */
  gatewayCpus: string;
  /** CPU list of the mock upstream and the load generator (this process) */
  clientCpus: string;
  /** one line for the report */
  description: string;
}

function hasTaskset(): boolean {
  const probe = spawnSync('taskset', ['-c', '0', 'true'], { stdio: 'ignore' });
  return probe.status === 0;
}

/** Gateway on one set of cores, load generator and mock on another; the same for every target. */
export function choosePlacement(requested: { gatewayCpus?: string; clientCpus?: string }): Placement {
  const cores = availableParallelism();
  const gatewayCpus = requested.gatewayCpus ?? '0';
  const clientCpus = requested.clientCpus ?? (cores > 1 ? '1' : '0');
  if (!hasTaskset()) {
    return {
      pinned: false, gatewayCpus, clientCpus,
      description: 'NOT PINNED: taskset is missing (install util-linux); every process may run on any core, so ratios are less stable',
    };
  }
  if (cores < 2) {
    return {
      pinned: true, gatewayCpus: '0', clientCpus: '0',
      description: 'one core only: gateway, mock and load generator all share CPU 0 (taskset -c 0)',
    };
  }
  return {
    pinned: true, gatewayCpus, clientCpus,
    description: `gateway under test on CPU ${gatewayCpus} (taskset -c ${gatewayCpus}); mock upstream and load generator on CPU ${clientCpus} (taskset -c ${clientCpus})`,
  };
}

/** Moves every thread of this process (the load generator) onto the client cores. */
export function pinSelf(placement: Placement): void {
  if (!placement.pinned) return;
  const result = spawnSync('taskset', ['-a', '-p', '-c', placement.clientCpus, String(process.pid)], { stdio: 'ignore' });
  if (result.status !== 0) throw new Error(`taskset could not pin the load generator to CPU ${placement.clientCpus}`);
}

export interface Started<T> { child: ChildProcess; value: T }

export class ChildProcesses {
  private readonly children = new Set<ChildProcess>();
  private stopping: Promise<void> | null = null;
  private cleanups: (() => void)[] = [];
  private readonly expected = new Set<ChildProcess>();
  /** children that exited while they should have been running (reported with the results) */
  readonly unexpectedExits: string[] = [];
  private readonly stderrTails = new Map<number, () => string>();

  constructor(private readonly placement: Placement) {
    // a synchronous last resort: whatever is still running when this process exits is killed
    process.on('exit', () => {
      for (const child of this.children) child.kill('SIGKILL');
      this.runCleanups();
    });
  }

  /** Runs once the children are stopped (or at exit): temporary data dirs and the like. */
  addCleanup(cleanup: () => void): void { this.cleanups.push(cleanup); }

  private runCleanups(): void {
    const cleanups = this.cleanups;
    this.cleanups = [];
    for (const cleanup of cleanups) {
      try { cleanup(); } catch { /* best effort */ }
    }
  }

  /**
   * Starts `node script args` on the given cores and resolves once a stdout line passes `accept`
   * (which returns the value to keep), or rejects when the child exits or the timeout passes.
   */
  start<T>(name: string, cpus: string, script: string, args: string[], env: NodeJS.ProcessEnv,
    accept: (line: string) => T | undefined, timeoutMs = 20_000, nodeArgs: string[] = [], execPath = process.execPath): Promise<Started<T>> {
    const command = this.placement.pinned ? 'taskset' : execPath;
    const nodeCommand = [...nodeArgs, script, ...args];
    const fullArgs = this.placement.pinned ? ['-c', cpus, execPath, ...nodeCommand] : nodeCommand;
    const child = spawn(command, fullArgs, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.children.add(child);
    let stderr = '';
    child.once('exit', (code, signal) => {
      this.children.delete(child);
      if (this.expected.has(child) || this.stopping) return;
      const line = `${name} (pid ${child.pid}) exited unexpectedly (${signal ?? `code ${code}`})${stderr ? `: ${stderr.trim().slice(-500)}` : ''}`;
      this.unexpectedExits.push(line);
      process.stderr.write(`warning: ${line}\n`);
    });
    this.stderrTails.set(child.pid ?? -1, () => stderr);
    // the last few KB of stderr, for the report when a child dies
    child.stderr!.on('data', (chunk: Buffer) => { stderr = (stderr + chunk.toString()).slice(-4096); });
    return new Promise((resolve, reject) => {
      let buffered = '';
      let done = false;
      const timer = setTimeout(() => finish(new Error(`${name} did not start within ${timeoutMs} ms: ${stderr.trim()}`)), timeoutMs);
      const finish = (error: Error | null, value?: T) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        if (error) { this.expected.add(child); child.kill('SIGKILL'); reject(error); } else resolve({ child, value: value as T });
      };
      child.stdout!.on('data', (chunk: Buffer) => {
        if (done) return;   // later output is read and dropped, so the pipe never fills
        buffered += chunk.toString();
        let newline = buffered.indexOf('\n');
        while (newline >= 0 && !done) {
          const line = buffered.slice(0, newline);
          buffered = buffered.slice(newline + 1);
          const value = accept(line);
          if (value !== undefined) finish(null, value);
          newline = buffered.indexOf('\n');
        }
      });
      child.once('exit', (code, signal) => finish(new Error(`${name} exited (${signal ?? code}) before it was ready: ${stderr.trim()}`)));
    });
  }

  /** The last few KB a child (and, for Tollgate, its workers) wrote to stderr. */
  stderrOf(pid: number): string { return this.stderrTails.get(pid)?.() ?? ''; }

  /** Stops one child (SIGTERM, SIGKILL after the grace period); for Tollgate that drains its workers. */
  stop(pid: number, graceMs = 8_000): Promise<void> {
    const child = [...this.children].find((candidate) => candidate.pid === pid);
    if (!child) return Promise.resolve();
    this.expected.add(child);
    return stopChild(child, graceMs);
  }

  /** SIGTERM to every child, SIGKILL to those still there after the grace period. */
  stopAll(graceMs = 8_000): Promise<void> {
    this.stopping ??= Promise.all([...this.children].map((child) => stopChild(child, graceMs))).then(() => this.runCleanups());
    return this.stopping;
  }
}

export function stopChild(child: ChildProcess, graceMs = 8_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => { clearTimeout(timer); resolve(); });
    child.kill('SIGTERM');
  });
}

/** Runs `node script args` to completion and returns its stdout (for the tollgate CLI). */
export function runNode(script: string, args: string[], env: NodeJS.ProcessEnv): string {
  const result = spawnSync(process.execPath, [script, ...args], { env, encoding: 'utf8', timeout: 30_000 });
  if (result.status !== 0) throw new Error(`${script} ${args[0] ?? ''} failed: ${result.stderr || result.error?.message}`);
  return result.stdout;
}

export interface Memory {
  /** resident set size now, KiB */
  rssKb: number;
  /** peak resident set size (VmHWM), KiB */
  peakKb: number;
  /** anonymous part of the RSS (heap, stacks), KiB: excludes mapped files such as the LMDB env */
  anonKb: number;
}

export function readMemory(pid: number): Memory | undefined {
  let text: string;
  try { text = readFileSync(`/proc/${pid}/status`, 'utf8'); } catch { return undefined; }
  const field = (name: string) => {
    const match = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text);
    return match ? Number(match[1]) : 0;
  };
  return { rssKb: field('VmRSS'), peakKb: field('VmHWM'), anonKb: field('RssAnon') };
}

/** Proportional set size (shared pages split between the processes that map them), KiB; undefined if unreadable. */
export function readPss(pid: number): number | undefined {
  try {
    const match = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** Threads of a process (the Threads line of /proc/<pid>/status). */
export function threadCount(pid: number): number {
  try {
    const match = /^Threads:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : 0;
  } catch {
    return 0;
  }
}

/** Direct children of a process, from /proc/<pid>/stat (no pgrep needed). */
export function childPids(parent: number): number[] {
  const pids: number[] = [];
  let entries: string[];
  try { entries = readdirSync('/proc'); } catch { return pids; }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // the command name is in parentheses and may hold spaces: fields after the last ')'
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === parent) pids.push(Number(entry));
    } catch { /* gone meanwhile */ }
  }
  return pids;
}

/** Samples the RSS of a changing set of processes at an interval and keeps the peak of each. */
export class MemorySampler {
  readonly peakKb = new Map<number, number>();
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly pids: () => number[]) {}

  sample(): void {
    for (const pid of this.pids()) {
      const memory = readMemory(pid);
      if (!memory) continue;
      // VmHWM is the kernel's own peak since the process started; the sampled RSS is a cross-check
      const peak = Math.max(memory.peakKb, memory.rssKb, this.peakKb.get(pid) ?? 0);
      this.peakKb.set(pid, peak);
    }
  }

  start(intervalMs = 500): void {
    this.sample();
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.sample();
  }
}

/** CPU time (user + system) of the process or thread whose /proc stat file this is, in seconds (Linux clock ticks of 10 ms). */
export function statCpuSeconds(statPath: string): number {
  const stat = readFileSync(statPath, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of stat, i.e. 12 and 13 after the command name
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** CPU time (user + system) used so far by the processes, in seconds. */
export function cpuSeconds(pids: number[]): number {
  let seconds = 0;
  for (const pid of pids) {
    try { seconds += statCpuSeconds(`/proc/${pid}/stat`); } catch { /* gone */ }
  }
  return seconds;
}
