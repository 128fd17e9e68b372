// A thread of a process that opens LMDB envs through the open gate (open-gate.ts) when the gate's
// holder cannot watch it itself (it is not the holder's child). For each env it is told of, it waits
// until the process's main thread waits on that env's write lock (the last thing the open does, so
// the racy part of the open is over), then writes the `.opened` mark that tells the holder to let go.
import { writeFileSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { sleepSync, waitsOnLock } from './lock-wait';

const { pid, timeoutMs } = workerData as { pid: number; timeoutMs: number };

function watch(lockFile: string, opened: string): void {
  const until = Date.now() + timeoutMs;
  try {
    while (Date.now() < until) {
      if (waitsOnLock(pid, lockFile)) { writeFileSync(opened, '', { mode: 0o600 }); return; }
      sleepSync(1);
    }
  } catch {
    // /proc cannot be read here: the holder lets go after its bound
  }
}

parentPort!.on('message', ({ lockFile, opened }: { lockFile: string; opened: string }) => watch(lockFile, opened));
