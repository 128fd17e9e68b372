// The data dir holds balances, usage and key digests (LMDB), the master secret and the admin token:
// it and everything in it are for the gateway's own user only (0700, files 0600).
import { chmodSync, mkdirSync, statSync } from 'node:fs';

/**
 * Creates the data dir 0700, or tightens an existing one that other users can read (saying so
 * through `note`); one that cannot be tightened stops the start with an error naming it.
 */
export function ensurePrivateDataDir(dataDir: string, note: (message: string) => void): void {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const mode = statSync(dataDir).mode & 0o777;
  if ((mode & 0o077) === 0) return;
  try {
    chmodSync(dataDir, 0o700);
  } catch (error) {
    throw new Error(`the data dir ${dataDir} is open to other users (mode 0${mode.toString(8)}) and could not be made 0700 `
      + `(${(error as NodeJS.ErrnoException).code ?? (error as Error).message}): change its mode or owner, or choose another TOLLGATE_DATA_DIR`);
  }
  note(`the data dir ${dataDir} was mode 0${mode.toString(8)}, readable by other users; it is now 0700`);
}

/** A file of the data dir made 0600 when it is open to others (LMDB creates its files 0644 under the usual umask). */
export function makePrivate(path: string): void {
  let mode: number;
  try { mode = statSync(path).mode & 0o777; } catch { return; }
  if ((mode & 0o077) !== 0) chmodSync(path, 0o600);
}
