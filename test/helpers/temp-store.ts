// A real Store in a fresh temp dir for each test of the file, closed and removed after it.
import { rmSync } from 'node:fs';
import { afterEach, beforeEach } from 'node:test';
import { LmdbStore as Store } from '../../src/store/lmdb';
import { tempDir } from './gateway';

export interface TempStore { store: Store; dataDir: string }

/** Call at the top of a test file; read `.store` / `.dataDir` inside the tests. */
export function useTempStore(prefix: string): TempStore {
  const current = { store: undefined as unknown as Store, dataDir: '' };
  beforeEach(() => { current.dataDir = tempDir(prefix); current.store = Store.open(current.dataDir); });
  afterEach(async () => {
    await current.store.close();
    rmSync(current.dataDir, { recursive: true, force: true });
  });
  return current;
}
