// The open gate: no process opens one of the data dir's LMDB envs while another process commits to it.
//
// lmdb's copy of LMDB (3.5.6) stores the transaction id it reads while opening an env into the lock
// file's shared state without holding the write lock. A commit another process makes in that window
// is then overwritten by the next write transaction, in any process: ids are handed out twice, and a
// batch, lease or top-up can be lost (docs/lmdb.md; upstream LMDB fixed the same race as ITS#9496).
// Nothing inside a write transaction can see or undo it: every write transaction starts from that id.
//
// Every process whose store is open (its main thread) is a member of the gate: it writes
// `<dataDir>/open-gate/member-PID-N` while the store is open and answers requests addressed to it. The
// process that serves the data dir (the supervisor, or a gateway started alone) is also the gate's
// holder: it writes its pid to `holder`, and openers ask it first.
// A process that opens the envs first takes the gate's open lock (`open.lock`: one process at a time
// opens, or closes, the envs), and keeps it until it is a member itself. Holding it, it asks one live
// member (the holder; else its parent; else any): it writes `ID.request` naming the env and that
// member (written whole, then renamed into place, since members act on the name as soon as it
// appears); the member takes that env's write lock and writes `ID.held`; the opener opens. lmdb's open
// ends with a write transaction of its own, which waits for that lock: by then the racy part of the
// open is over. The member sees the opener's main thread wait on the lock (Linux, /proc) and lets go;
// an opener that is not the member's child (a CLI command, whose /proc a ptrace policy may hide) also
// runs a watcher thread that writes `ID.opened` when it sees the wait.
// Where the wait cannot be seen, the member lets go after HOLD_AT_MOST_MS, which is also safe: the
// open's own write transaction cannot start before. Writers of every process wait on the lock for
// the milliseconds an open takes. With no live member, no process has the envs open, and none can
// open them before this open is over (the open lock): the open goes ahead at once. A closing member
// takes the open lock too, and answers until it has it, so no opener waits on a member that leaves.
import { existsSync, linkSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, watch, writeFileSync, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import { isMainThread, Worker } from 'node:worker_threads';
import { lockWaitVisible, sleepSync, waitsOnLock } from './lock-wait';

const GATE_DIR = 'open-gate';
const HOLDER_FILE = 'holder';
/** `member-PID-N`: store N of process PID is open and answers requests addressed to PID */
const MEMBER_PREFIX = 'member-';
/** held by the one process that opens or closes the envs (its content: `PID-N`) */
const OPEN_LOCK = 'open.lock';
/** how often a member looks for requests when the gate dir's change events are not available */
const POLL_MS = 20;
/** how often a member that gets change events looks anyway (an event missed, a request written before the watch) */
const WATCHED_POLL_MS = 1_000;
/** an opener that sees no hold within this opens anyway (the member it asked is stuck) */
const WAIT_FOR_HOLD_MS = 10_000;
/** a member lets go after this even when it never hears that the opener got to the lock */
export const HOLD_AT_MOST_MS = 5_000;
/** an opener or closer that cannot take the open lock within this goes on without it (its owner is stuck) */
const WAIT_FOR_LOCK_MS = 30_000;

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

function readOrUndefined(file: string): string | undefined {
  try { return readFileSync(file, 'utf8'); } catch { return undefined; }
}

/** The pid of the live process (other than this one) that holds the gate of `dataDir`, if any. */
function liveHolder(dataDir: string): number | undefined {
  const pid = Number(readOrUndefined(join(gateDir(dataDir), HOLDER_FILE)));
  if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) return undefined;
  return processAlive(pid) ? pid : undefined;
}

/** The live members of the gate other than this process; the marks of members that are gone are removed. */
function liveMembers(dataDir: string): number[] {
  const dir = gateDir(dataDir);
  const pids = new Set<number>();
  for (const name of readdirSync(dir)) {
    if (!name.startsWith(MEMBER_PREFIX)) continue;
    const pid = Number(name.slice(MEMBER_PREFIX.length).split('-')[0]);
    if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) continue;
    if (processAlive(pid)) pids.add(pid);
    else rmSync(join(dir, name), { force: true });
  }
  return [...pids].sort((a, b) => a - b);
}

/**
 * The member an opener asks to hold: the holder; else its parent, which watches its children's
 * wait itself; else any. Undefined when no other process has the envs open.
 */
function memberToAsk(dataDir: string): number | undefined {
  const holder = liveHolder(dataDir);
  if (holder !== undefined) return holder;
  const members = liveMembers(dataDir);
  return members.includes(process.ppid) ? process.ppid : members[0];
}

let lockTokens = 0;

/**
 * The gate's open lock: one process at a time opens the envs (until it is a member) or closes them
 * (until it no longer is). Taken by linking a file of this process's own to `open.lock`, which fails
 * while the name exists; a lock whose owner is gone (killed while opening) is moved aside and removed.
 */
class OpenLock {
  private constructor(private readonly file: string, private readonly token: string) {}

  private static tryTake(dir: string): OpenLock | undefined {
    const file = join(dir, OPEN_LOCK);
    const token = `${process.pid}-${++lockTokens}`;
    const mine = join(dir, `${OPEN_LOCK}.${token}`);
    writeFileSync(mine, token, { mode: 0o600 });
    try {
      for (let attempt = 0; attempt < 3; attempt += 1) {
        try {
          linkSync(mine, file);
          return new OpenLock(file, token);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        }
        const owner = readOrUndefined(file);
        if (owner === undefined) continue;   // released meanwhile
        if (processAlive(Number(owner.split('-')[0]))) return undefined;
        // its owner is gone: moved aside under a name of this process's, then removed if it is still that owner's
        const aside = `${mine}.stale`;
        try { renameSync(file, aside); } catch { continue; }
        if (readOrUndefined(aside) !== owner) {
          // another process took the lock between the read and the move: it is put back
          try { linkSync(aside, file); } catch { /* taken again meanwhile: that owner has it */ }
        }
        rmSync(aside, { force: true });
      }
      return undefined;
    } finally {
      rmSync(mine, { force: true });
    }
  }

  /**
   * Takes the lock, blocking this thread while a live process holds it (an open is synchronous).
   * Meanwhile this process's own members of the gate answer: the lock's owner may be waiting on one.
   */
  static take(dir: string): OpenLock | undefined {
    const until = Date.now() + WAIT_FOR_LOCK_MS;
    for (;;) {
      const lock = OpenLock.tryTake(dir);
      if (lock !== undefined || Date.now() >= until) return lock;
      for (const member of joined) member.poll();
      sleepSync(2);
    }
  }

  /** Takes the lock without blocking the event loop, so this process goes on answering requests meanwhile. */
  static async takeAsync(dir: string): Promise<OpenLock | undefined> {
    const until = Date.now() + WAIT_FOR_LOCK_MS;
    for (;;) {
      const lock = OpenLock.tryTake(dir);
      if (lock !== undefined || Date.now() >= until) return lock;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  release(): void {
    if (readOrUndefined(this.file) === this.token) rmSync(this.file, { force: true });
  }
}

let requests = 0;
let memberships = 0;
/** this process's members of a gate (one per open store) */
const joined = new Set<OpenGate>();

/**
 * Opens envs of one data dir through its gate: holds the open lock from its construction, and runs
 * each open under the hold of a live member, if there is one. Threads skip the gate: they share the
 * envs their process's main thread opened. close() once this process answers the gate itself, or
 * the open failed (it releases the lock and ends the watcher thread).
 */
export class GatedOpener {
  private readonly lock: OpenLock | undefined;
  private member: number | undefined;
  private watcher: Worker | undefined;

  constructor(private readonly dataDir: string) {
    if (!isMainThread) return;
    mkdirSync(gateDir(dataDir), { recursive: true, mode: 0o700 });
    this.lock = OpenLock.take(gateDir(dataDir));
    this.member = memberToAsk(dataDir);
    this.startWatcher();
  }

  /**
   * A member sees its own children wait (/proc); for another process, a thread of this one watches.
   * Started before the first request, so that it boots while the member answers.
   */
  private startWatcher(): void {
    if (this.watcher !== undefined || this.member === undefined || this.member === process.ppid || !lockWaitVisible) return;
    this.watcher = new Worker(require.resolve('./open-gate-watcher'), { workerData: { pid: process.pid, timeoutMs: HOLD_AT_MOST_MS } });
    this.watcher.unref();
  }

  /**
   * Asks the member to hold `envFile`'s write lock; returns the request's id once it holds (or has
   * not answered within WAIT_FOR_HOLD_MS), undefined if the member went away first.
   */
  private ask(member: number, envFile: string): string | undefined {
    const dir = gateDir(this.dataDir);
    const id = `${process.pid}-${Date.now()}-${++requests}`;
    // written whole, then renamed into place: members act on the name as soon as it appears
    writeFileSync(join(dir, `${id}.pending`), `${envFile}\n${member}`, { mode: 0o600 });
    renameSync(join(dir, `${id}.pending`), join(dir, `${id}.request`));
    const deadline = Date.now() + WAIT_FOR_HOLD_MS;
    while (!existsSync(join(dir, `${id}.held`)) && Date.now() < deadline) {
      if (!processAlive(member)) {
        for (const suffix of ['.request', '.held']) rmSync(join(dir, `${id}${suffix}`), { force: true });
        return undefined;
      }
      sleepSync(2);
    }
    return id;
  }

  /** Runs `open`, which opens the env `<dataDir>/<envFile>`. */
  open<T>(envFile: string, open: () => T): T {
    let id: string | undefined;
    while (this.member !== undefined && (id = this.ask(this.member, envFile)) === undefined) {
      this.member = memberToAsk(this.dataDir);   // the member went away: another is asked, if any is left
      this.startWatcher();
    }
    if (id === undefined) return open();
    const opened = join(gateDir(this.dataDir), `${id}.opened`);
    try {
      this.watcher?.postMessage({ lockFile: join(this.dataDir, `${envFile}-lock`), opened });
      return open();
    } finally {
      // also when the open failed or was not seen waiting: the member lets go either way
      writeFileSync(opened, '', { mode: 0o600 });
    }
  }

  close(): void {
    void this.watcher?.terminate();
    this.lock?.release();
  }
}

/** A member's side: runs `body` holding the write lock of the env file it names. */
export type HoldWriteLock = (envFile: string, body: () => void) => void;

/**
 * A member of the gate, the holder if it serves the data dir: answers the requests addressed to it
 * until it leaves. It hears of a request from the gate dir's change events (inotify), so an idle
 * process does no work for the gate; it still looks every WATCHED_POLL_MS, and every POLL_MS where
 * change events are not available.
 */
export class OpenGate {
  private timer: NodeJS.Timeout;
  private readonly dir: string;
  private watcher: FSWatcher | undefined;
  private readonly memberFile: string;

  private constructor(private readonly dataDir: string, private readonly holdWriteLock: HoldWriteLock, watchChanges: boolean,
    private readonly holds: boolean) {
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
    // written once requests are heard: an opener may address this process as soon as the mark exists
    this.memberFile = join(this.dir, `${MEMBER_PREFIX}${process.pid}-${++memberships}`);
    writeFileSync(this.memberFile, '', { mode: 0o600 });
    joined.add(this);
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
   * Joins `dataDir`'s gate once this process's store is open there (call it while the GatedOpener
   * still holds the open lock). `serves`: the process serves the data dir and becomes the gate's
   * holder; it claims that whatever the file says: a holder file left by a process killed -9 may
   * name a pid the system gave again. Undefined on a thread (its process's main thread answers).
   */
  static join(dataDir: string, holdWriteLock: HoldWriteLock, options: { serves?: boolean; watchChanges?: boolean } = {}): OpenGate | undefined {
    if (!isMainThread) return undefined;
    const dir = gateDir(dataDir);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (options.serves) {
      const temporary = join(dir, `${HOLDER_FILE}.${process.pid}`);
      writeFileSync(temporary, String(process.pid), { mode: 0o600 });
      renameSync(temporary, join(dir, HOLDER_FILE));
    }
    return new OpenGate(dataDir, holdWriteLock, options.watchChanges ?? true, options.serves === true);
  }

  /** Answers the requests waiting now (also called while this process waits for the open lock itself). */
  poll(): void {
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
    const request = readOrUndefined(join(this.dir, `${id}.request`));
    if (request === undefined || request === '') return;   // gone, or not written yet (an opener of another version)
    const [envFile, to] = request.split('\n');
    // a request names the member it asks; one that names none asks the holder
    if (to === undefined ? !this.holds : Number(to) !== process.pid) return;
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

  /**
   * Leaves the gate: takes the open lock (answering requests until it has it, since an opener holding
   * it may be waiting on this process), stops answering, runs `close` (which closes the envs) and
   * lets the lock go. No opener counts on this process from then on, nor opens while it closes.
   */
  async leave(close: () => Promise<void>): Promise<void> {
    const lock = await OpenLock.takeAsync(this.dir);
    try {
      this.stop();
      await close();
    } finally {
      lock?.release();
    }
  }

  private stop(): void {
    joined.delete(this);
    clearInterval(this.timer);
    this.watcher?.close();
    this.watcher = undefined;
    rmSync(this.memberFile, { force: true });
    if (!this.holds) return;
    const file = join(this.dir, HOLDER_FILE);
    try {
      if (Number(readFileSync(file, 'utf8')) === process.pid) rmSync(file, { force: true });
    } catch {
      // already gone
    }
  }
}
