// Operator tokens for the admin API (/api/admin/*): a scope above the account access tokens, kept
// in a table of their own and stored as SHA-256 digests, like access tokens.
import type { Databases } from './database';
import type { AdminStore, AdminTokenRecord } from '../types';

export class LmdbAdmin implements AdminStore {
  constructor(private readonly databases: Databases) {}

  async addToken(digestHex: string, label: string): Promise<void> {
    const record: AdminTokenRecord = { created_time: Math.floor(Date.now() / 1000), label };
    await this.databases.adminTokens.put(digestHex, record);
  }

  resolveToken(digestHex: string): AdminTokenRecord | undefined {
    return this.databases.adminTokens.get(digestHex) as AdminTokenRecord | undefined;
  }

  /** Revokes every admin token; returns how many there were. */
  async revokeTokens(): Promise<number> {
    const { adminTokens } = this.databases;
    return this.databases.root.transaction(() => {
      let revoked = 0;
      for (const key of adminTokens.getKeys({})) { adminTokens.removeSync(key); revoked += 1; }
      return revoked;
    });
  }
}
