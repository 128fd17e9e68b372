// Whether a process's main thread waits on a futex inside an LMDB lock file (the env's write lock),
// read from /proc (Linux). The open gate (open-gate.ts) lets go of a hold once the opener waits there.
import { readFileSync, statSync } from 'node:fs';

/** futex(2)'s number, as /proc/PID/task/TID/syscall shows it */
const FUTEX: Record<string, string> = { x64: '202', arm64: '98' };
const futex = FUTEX[process.arch];

const sleeper = new Int32Array(new SharedArrayBuffer(4));
/** Blocks this thread for `ms`: the gate's waits run where no event loop may turn (inside a write transaction, in a synchronous open). */
export function sleepSync(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms);
}

/** Whether this system lets the wait be seen at all. */
export const lockWaitVisible = process.platform === 'linux' && futex !== undefined;

/** The address ranges where `lockFile` (by its inode: the path may be relative or a link) is mapped into process `pid`. */
function lockFileRanges(pid: number, lockFile: string): Array<[bigint, bigint]> {
  let inode: string;
  try { inode = String(statSync(lockFile).ino); } catch { return []; }   // not created yet
  const ranges: Array<[bigint, bigint]> = [];
  for (const line of readFileSync(`/proc/${pid}/maps`, 'utf8').split('\n')) {
    const fields = line.split(/\s+/);
    if (fields[4] !== inode) continue;
    const [start, end] = fields[0].split('-').map((hex) => BigInt(`0x${hex}`));
    ranges.push([start, end]);
  }
  return ranges;
}

/**
 * True when the main thread of `pid` waits on a futex inside `lockFile`'s mapping. Throws where
 * /proc cannot be read for that process (another user, a ptrace policy that forbids it).
 */
export function waitsOnLock(pid: number, lockFile: string): boolean {
  const fields = readFileSync(`/proc/${pid}/task/${pid}/syscall`, 'utf8').split(' ');
  if (fields[0] !== futex) return false;
  const address = BigInt(fields[1]);
  return lockFileRanges(pid, lockFile).some(([start, end]) => address >= start && address < end);
}
