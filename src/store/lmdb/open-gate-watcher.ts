// A thread of a process that opens LMDB envs through the open gate (open-gate.ts). For each env it is
// told of, it watches the process's main thread and, once that thread waits on a futex inside the
// env's lock file (the write lock the open asks for last, so the racy part of the open is over),
// writes the `.opened` mark that tells the holder to let go. Linux only (/proc); elsewhere the holder
// lets go after its bound.
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';

const { tid, timeoutMs } = workerData as { tid: number; timeoutMs: number };
/** futex(2)'s number, as /proc/PID/task/TID/syscall shows it */
const FUTEX: Record<string, string> = { x64: '202', arm64: '98' };
const futex = FUTEX[process.arch];
const nap = new Int32Array(new SharedArrayBuffer(4));

/** The address ranges where the lock file (by its inode: the path may be relative or a link) is mapped into this process. */
function lockFileRanges(lockFile: string): Array<[bigint, bigint]> {
  let inode: string;
  try { inode = String(statSync(lockFile).ino); } catch { return []; }   // not created yet
  const ranges: Array<[bigint, bigint]> = [];
  for (const line of readFileSync('/proc/self/maps', 'utf8').split('\n')) {
    const fields = line.split(/\s+/);
    if (fields[4] !== inode) continue;
    const [start, end] = fields[0].split('-').map((hex) => BigInt(`0x${hex}`));
    ranges.push([start, end]);
  }
  return ranges;
}

function waitsOnTheLock(lockFile: string): boolean {
  const fields = readFileSync(`/proc/self/task/${tid}/syscall`, 'utf8').split(' ');
  if (fields[0] !== futex) return false;
  const address = BigInt(fields[1]);
  return lockFileRanges(lockFile).some(([start, end]) => address >= start && address < end);
}

/** Watches until the main thread waits on `lockFile`'s lock, then writes `opened`. */
function watch(lockFile: string, opened: string): void {
  if (futex === undefined) return;
  const until = Date.now() + timeoutMs;
  try {
    while (Date.now() < until) {
      if (waitsOnTheLock(lockFile)) { writeFileSync(opened, '', { mode: 0o600 }); return; }
      Atomics.wait(nap, 0, 0, 1);
    }
  } catch {
    // no /proc here: the holder lets go after its bound
  }
}

parentPort!.on('message', ({ lockFile, opened }: { lockFile: string; opened: string }) => watch(lockFile, opened));
