// What a process does before it serves: the first start's admin account, and the master secret
// checked against the data dir. Apart from the gateway (src/main.ts), so the supervisor, which
// runs these but never serves a request, does not load the request path's modules.
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { generateAccessToken, loadMasterKey, seal, tokenDigest, unseal, type SealedValue } from './auth/secrets';
import { ConfigError, type Config } from './config';
import type { Logger } from './log';
import type { Store } from './store';

/**
 * First start with an empty data dir: create `admin` and write its access token to
 * <dataDir>/admin-token (0600), exactly once across processes and restarts; the log says where.
 */
export async function bootstrapAdmin(store: Store, config: Config, log: Logger): Promise<void> {
  if (!(await store.accounts.claimBootstrap())) return;
  const account = await store.accounts.create('admin', 'default', 0);
  if (account === 'exists') return;
  const token = generateAccessToken();
  await store.accounts.addAccessToken(tokenDigest(token).toString('hex'), account.id, 'write');
  const path = join(config.dataDir, 'admin-token');
  writeFileSync(path, `${token}\n`, { mode: 0o600 });
  // where the token is, never the token: logs are kept, shipped and read by more people than the file
  log.info({ account: account.id, admin_token_file: path }, `bootstrapped account "admin"; its access token is in ${path} (mode 0600)`);
}

const SECRET_CHECK_TEXT = 'tollgate master secret check';

function opens(masterKey: Buffer, sealed: SealedValue): boolean {
  try { unseal(masterKey, sealed); return true; } catch { return false; }
}

/**
 * The master secret (TOLLGATE_SECRET, else <dataDir>/secret.key), checked against the data dir: a
 * secret other than the one its keys were sealed with would answer every reveal with an error, so
 * the start fails instead, naming where the secret came from (never the secret). The first start
 * keeps a value sealed under it to check later starts against; a data dir from before that check
 * is checked against one of its keys.
 */
export async function openMasterKey(store: Store, config: Config): Promise<Buffer> {
  const masterKey = loadMasterKey(config.dataDir, config.secret);
  const mismatch = () => new ConfigError(`the master secret (${config.secret ? 'TOLLGATE_SECRET' : join(config.dataDir, 'secret.key')}) `
    + `is not the one the API keys in ${config.dataDir} were sealed with: start with the original secret`);
  let check = await store.secretCheck();
  if (check === undefined) {
    const key = await store.keys.anySealed();   // a data dir from before the check
    if (key !== undefined && !opens(masterKey, key)) throw mismatch();
    // the one kept: another process may have claimed it first, under its own secret
    check = await store.claimSecretCheck(seal(masterKey, SECRET_CHECK_TEXT));
  }
  if (!opens(masterKey, check)) throw mismatch();
  return masterKey;
}
