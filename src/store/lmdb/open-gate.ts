// The open gate: no process opens one of the data dir's LMDB envs while another process commits to it.
//
// lmdb's copy of LMDB (3.5.6) stores the transaction id it reads while opening an env into the lock
// file's shared state without holding the write lock. A commit another process makes in that window
// is then overwritten by the next write transaction, in any process: ids are handed out twice, and a
// batch, lease or top-up can be lost (docs/lmdb.md; upstream LMDB fixed the same race as ITS#9496).
//
// A process that serves the data dir (the supervisor, or a gateway started alone) is the gate's
// holder: it writes its pid to `<dataDir>/open-gate/holder` and watches for requests. Another process
// that opens an env while a live holder exists (a worker starting or replacing one, a CLI command,
// a test) asks first: it writes `ID.request` naming the env (written whole, then renamed into place,
// since the holder acts on the name as soon as it appears); the holder takes that env's write lock
// and writes `ID.held`; the opener opens. lmdb's open ends with a write transaction of its own, which
// waits for that lock: by then the racy part of the open is over. The holder sees the opener's main
// thread wait on the lock (Linux, /proc) and lets go; an opener that is not the holder's child (a CLI
// command, whose /proc a ptrace policy may hide from the holder) also runs a watcher thread that
// writes `ID.opened` when it sees the wait.
// Where the wait cannot be seen, the holder lets go after HOLD_AT_MOST_MS, which is also safe: the
// open's own write transaction cannot start before. Writers of every process wait on the lock for
// the milliseconds an open takes. With no live holder, nothing serves the data dir: opened at once.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, watch, writeFileSync, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import { isMainThread, Worker } from 'node:worker_threads';
import { lockWaitVisible, sleepSync, waitsOnLock } from './lock-wait';

const GATE_DIR = 'open-gate';
const HOLDER_FILE = 'holder';
/** how often a holder looks for requests when the gate dir's change events are not available */
const POLL_MS = 20;
/** how often a holder that gets change events looks anyway (an event missed, a request written before the watch) */
const WATCHED_POLL_MS = 1_000;
/** an opener that sees no hold within this opens anyway (its holder is stuck) */
const WAIT_FOR_HOLD_MS = 10_000;
/** a holder lets go after this even when it never hears that the opener got to the lock */
export const HOLD_AT_MOST_MS = 5_000;

function gateDir(dataDir: string): string {
  return join(dataDir, GATE_DIR);
}

/** Whether a process with this pid runs (one of another user, which may not be signalled, counts). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The pid of the live process (other than this one) that holds the gate of `dataDir`, if any. */
function liveHolder(dataDir: string): number | undefined {
  let pid: number;
  try { pid = Number(readFileSync(join(gateDir(dataDir), HOLDER_FILE), 'utf8')); } catch { return undefined; }
  if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) return undefined;
  return processAlive(pid) ? pid : undefined;
}

let requests = 0;

/**
 * Opens envs of one data dir through its gate: each open runs under the hold of the gate's live
 * holder, if there is one. Threads skip the gate: they share the envs their process's main thread
 * opened. close() when done (it ends the watcher thread).
 */
export class GatedOpener {
  private readonly holder: number | undefined;
  private readonly watcher: Worker | undefined;

  constructor(private readonly dataDir: string) {
    this.holder = isMainThread ? liveHolder(dataDir) : undefined;
    // A holder sees its own children wait (/proc); for another process, a thread of this one watches.
    // Started before the first request, so that it boots while the holder answers.
    if (this.holder === undefined || this.holder === process.ppid || !lockWaitVisible) return;
    this.watcher = new Worker(require.resolve('./open-gate-watcher'), { workerData: { pid: process.pid, timeoutMs: HOLD_AT_MOST_MS } });
    this.watcher.unref();
  }

  /** Runs `open`, which opens the env `<dataDir>/<envFile>`. */
  open<T>(envFile: string, open: () => T): T {
    if (this.holder === undefined) return open();
    const dir = gateDir(this.dataDir);
    const id = `${process.pid}-${Date.now()}-${++requests}`;
    const opened = join(dir, `${id}.opened`);
    // written whole, then renamed into place: the holder acts on the name as soon as it appears
    writeFileSync(join(dir, `${id}.pending`), envFile, { mode: 0o600 });
    renameSync(join(dir, `${id}.pending`), join(dir, `${id}.request`));
    try {
      const deadline = Date.now() + WAIT_FOR_HOLD_MS;
      while (!existsSync(join(dir, `${id}.held`)) && Date.now() < deadline && processAlive(this.holder)) sleepSync(2);
      this.watcher?.postMessage({ lockFile: join(this.dataDir, `${envFile}-lock`), opened });
      return open();
    } finally {
      // also when the open failed or was not seen waiting: the holder lets go either way
      writeFileSync(opened, '', { mode: 0o600 });
    }
  }

  close(): void {
    void this.watcher?.terminate();
  }
}

/** The holder's side: runs `body` holding the write lock of the env file it names. */
export type HoldWriteLock = (envFile: string, body: () => void) => void;

/**
 * The holder: answers requests until stop(). It hears of a request from the gate dir's change events
 * (inotify), so an idle gateway does no work for the gate; it still looks every WATCHED_POLL_MS, and
 * every POLL_MS where change events are not available.
 */
export class OpenGate {
  private timer: NodeJS.Timeout;
  private readonly dir: string;
  private watcher: FSWatcher | undefined;

  private constructor(private readonly dataDir: string, private readonly holdWriteLock: HoldWriteLock, watchChanges: boolean) {
    this.dir = gateDir(dataDir);
    if (watchChanges) {
      try {
        this.watcher = watch(this.dir, { persistent: false }, (_event, name) => {
          if (name === null || String(name).endsWith('.request')) this.poll();
        });
        this.watcher.on('error', () => this.pollOften());
      } catch {
        this.watcher = undefined;
      }
    }
    this.timer = this.pollEvery(this.watcher === undefined ? POLL_MS : WATCHED_POLL_MS);
  }

  private pollEvery(ms: number): NodeJS.Timeout {
    const timer = setInterval(() => this.poll(), ms);
    timer.unref();
    return timer;
  }

  /** The change events failed: back to looking every POLL_MS. */
  private pollOften(): void {
    this.watcher?.close();
    this.watcher = undefined;
    clearInterval(this.timer);
    this.timer = this.pollEvery(POLL_MS);
  }

  /**
   * Becomes the holder of `dataDir`'s gate. The process that serves the data dir claims it whatever
   * the file says: a holder file left by a process killed -9 may name a pid the system gave again.
   */
  static hold(dataDir: string, holdWriteLock: HoldWriteLock, options: { watchChanges?: boolean } = {}): OpenGate | undefined {
    if (!isMainThread) return undefined;
    const dir = gateDir(dataDir);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const temporary = join(dir, `${HOLDER_FILE}.${process.pid}`);
    writeFileSync(temporary, String(process.pid), { mode: 0o600 });
    renameSync(temporary, join(dir, HOLDER_FILE));
    return new OpenGate(dataDir, holdWriteLock, options.watchChanges ?? true);
  }

  private poll(): void {
    let names: string[];
    try { names = readdirSync(this.dir); } catch { return; }
    for (const name of names) {
      if (name.endsWith('.request')) this.serve(name.slice(0, -'.request'.length));
    }
    this.sweep(names);
  }

  /** Holds the named env's write lock while opener `id` opens it. */
  private serve(id: string): void {
    const opened = join(this.dir, `${id}.opened`);
    let envFile: string;
    try { envFile = readFileSync(join(this.dir, `${id}.request`), 'utf8'); } catch { return; }
    if (envFile === '') return;   // not written yet (an opener of another version): looked at again later
    const opener = Number(id.split('-')[0]);
    const lockFile = join(this.dataDir, `${envFile}-lock`);
    let watching = lockWaitVisible;
    /** whether the opener's main thread waits on the lock, when /proc lets this process see it */
    const waits = (): boolean => {
      if (!watching) return false;
      try { return waitsOnLock(opener, lockFile); } catch { watching = false; return false; }
    };
    if (!existsSync(opened) && processAlive(opener)) {
      this.holdWriteLock(envFile, () => {
        writeFileSync(join(this.dir, `${id}.held`), '', { mode: 0o600 });
        const until = Date.now() + HOLD_AT_MOST_MS;
        while (!existsSync(opened) && !waits() && Date.now() < until && processAlive(opener)) sleepSync(1);
      });
    }
    for (const suffix of ['.request', '.held']) rmSync(join(this.dir, `${id}${suffix}`), { force: true });
  }

  /** Removes the `.opened` marks of requests already answered (an opener writes its request first). */
  private sweep(names: string[]): void {
    for (const name of names) {
      if (name.endsWith('.opened') && !names.includes(name.replace(/\.opened$/, '.request'))) rmSync(join(this.dir, name), { force: true });
    }
  }

  stop(): void {
    clearInterval(this.timer);
    this.watcher?.close();
    this.watcher = undefined;
    const file = join(this.dir, HOLDER_FILE);
    try {
      if (Number(readFileSync(file, 'utf8')) === process.pid) rmSync(file, { force: true });
    } catch {
      // already gone
    }
  }
}
