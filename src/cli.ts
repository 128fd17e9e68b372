// The `tollgate` command (DESIGN §3): serve, account create|token|topup|list|rotate-tokens, migrate.
// Account commands work on the configured store directly (the LMDB data dir is multi-process safe;
// with the postgres store, the cluster's database), server running or not.
import './process-flags';   // first: V8 flags of the supervisor, before the rest loads
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { generateAccessToken, tokenDigest } from './auth/secrets';
import { ConfigError, loadConfig, QUOTA_PER_USD, redacted, type Config } from './config';
import { createLogger } from './log';
import { bootstrapAdmin } from './bootstrap';
import { accountView } from './formats/account-view';
import { MAX_BALANCE, openStore, type AccountRecord, type Store } from './store';
import { runSupervisor, runWorker } from './supervisor';
import { issueAdminToken } from './auth/admin-token';
import { pidFile } from './ops/cluster-link';
import { readFileSync } from 'node:fs';

const USAGE = `usage:
  tollgate serve [--config PATH]
  tollgate account create --name NAME [--balance-usd N] [--group G] [--json]
  tollgate account token --account ID|NAME [--read-only] [--json]
  tollgate account rotate-tokens --account ID|NAME [--json]   (revokes every token, issues a new one)
  tollgate account topup --account ID|NAME --usd N [--json]
  tollgate account list [--json]
  tollgate config [--config PATH]                              (prints the validated config, secrets redacted)
  tollgate migrate [--to postgres://…] [--json]                (applies the schema migrations of the postgres store)
  tollgate migrate --from DATA_DIR --to postgres://… [--force] [--json]   (copies a single box's LMDB store into PostgreSQL)
  tollgate admin token [--json]                                (a new admin token for /api/admin/*)
  tollgate admin revoke-tokens [--json]                        (revokes every admin token)
  tollgate reload [--json]                                     (the running server re-reads its config file)
environment: TOLLGATE_CONFIG, PORT, HOST, TOLLGATE_DATA_DIR, TOLLGATE_WORKERS, TOLLGATE_SECRET, TOLLGATE_FRONT=node`;

class UsageError extends Error {}


function print(json: boolean, value: unknown, human: string): void {
  process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${human}\n`);
}

function usdToQuota(text: string | undefined, flag: string): number {
  const usd = text === undefined || text.trim() === '' ? NaN : Number(text);
  if (!Number.isFinite(usd) || usd < 0 || usd * QUOTA_PER_USD > MAX_BALANCE) {
    throw new UsageError(`${flag} must be a number of US dollars from 0 to ${MAX_BALANCE / QUOTA_PER_USD}`);
  }
  return Math.round(usd * QUOTA_PER_USD);
}

/** `parse` (node:util parseArgs) with its errors (an unknown flag, a value that looks like a flag) as usage errors. */
function parsedFlags<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS')) {
      throw new UsageError(`${(error as Error).message.split('\n')[0]} (write a negative or flag-like value as --flag=VALUE)`);
    }
    throw error;
  }
}

async function issueToken(store: Store, accountId: number, scope: 'read' | 'write'): Promise<string> {
  const token = generateAccessToken();
  await store.accounts.addAccessToken(tokenDigest(token).toString('hex'), accountId, scope);
  return token;
}

async function accountCommand(config: Config, args: string[]): Promise<void> {
  const [action, ...rest] = args;
  const { values } = parsedFlags(() => parseArgs({
    args: rest, allowPositionals: false,
    options: {
      name: { type: 'string' }, 'balance-usd': { type: 'string' }, group: { type: 'string' }, account: { type: 'string' },
      'read-only': { type: 'boolean' }, usd: { type: 'string' }, json: { type: 'boolean' }, config: { type: 'string' },
    },
  }));
  const json = values.json === true;
  const store = await openStore(config);
  try {
    await bootstrapAdmin(store, config, createLogger('warn'));
    const findAccount = async (): Promise<AccountRecord> => {
      if (!values.account) throw new UsageError('--account ID|NAME is required');
      const account = await store.accounts.find(values.account);
      if (!account) throw new UsageError(`no account "${values.account}"`);
      return account;
    };
    switch (action) {
      case 'create': {
        const name = values.name;
        if (!name || name.length > 64 || !/^[\w.@-]+$/.test(name)) throw new UsageError('--name is required: up to 64 letters, digits, _ . @ -');
        const group = values.group ?? 'default';
        if (!config.groups[group]) throw new UsageError(`group "${group}" is not in the config (known: ${Object.keys(config.groups).join(', ')})`);
        const balance = values['balance-usd'] === undefined ? 0 : usdToQuota(values['balance-usd'], '--balance-usd');
        const account = await store.accounts.create(name, group, balance);
        if (account === 'exists') throw new UsageError(`account "${name}" already exists`);
        const token = await issueToken(store, account.id, 'write');
        print(json, { id: account.id, name: account.name, access_token: token },
          `created account ${account.name} (id ${account.id}, balance $${balance / QUOTA_PER_USD})\naccess token: ${token}`);
        return;
      }
      case 'token': {
        const account = await findAccount();
        const scope = values['read-only'] ? 'read' : 'write';
        const token = await issueToken(store, account.id, scope);
        print(json, { access_token: token, scope }, `${scope} access token for ${account.name}: ${token}`);
        return;
      }
      case 'rotate-tokens': {
        const account = await findAccount();
        const revoked = await store.accounts.revokeAccessTokens(account.id);
        const token = await issueToken(store, account.id, 'write');
        print(json, { revoked, access_token: token, scope: 'write' },
          `revoked ${revoked} access token(s) of ${account.name}; new access token: ${token}`);
        return;
      }
      case 'topup': {
        const account = await findAccount();
        const updated = await store.accounts.topUp(account.id, usdToQuota(values.usd, '--usd'));
        if (!updated) throw new UsageError(`no account "${values.account}"`);
        if (updated === 'limit') {
          throw new UsageError(`the balance of ${account.name} would pass the most an account may hold ($${MAX_BALANCE / QUOTA_PER_USD}); it holds $${account.balance / QUOTA_PER_USD}`);
        }
        print(json, accountView(updated), `${updated.name}: balance ${updated.balance} quota ($${updated.balance / QUOTA_PER_USD})`);
        return;
      }
      case 'list': {
        const accounts = (await store.accounts.list()).map(accountView);
        print(json, accounts, accounts.map((account) => `${account.id}\t${account.name}\t${account.group}\t$${account.balance_usd}`).join('\n'));
        return;
      }
      default:
        throw new UsageError(`unknown account command "${action ?? ''}"`);
    }
  } finally {
    await store.close();
  }
}

/**
 * `tollgate migrate`: without --from, applies the schema migrations to the postgres store (the
 * config's, or --to); with --from DATA_DIR --to URL, copies that LMDB store into the database and
 * verifies counts and sums, refusing a non-empty target unless --force.
 */
async function migrateCommand(config: Config, args: string[]): Promise<void> {
  const { values } = parsedFlags(() => parseArgs({
    args, allowPositionals: false,
    options: { from: { type: 'string' }, to: { type: 'string' }, force: { type: 'boolean' }, json: { type: 'boolean' }, config: { type: 'string' } },
  }));
  const json = values.json === true;
  const target = values.to ?? (config.store.type === 'postgres' ? config.store.url : undefined);
  if (target === undefined) throw new UsageError('--to postgres://… is required (the configured store is lmdb, which has no schema migrations)');
  if (!/^postgres(ql)?:\/\//.test(target)) throw new UsageError('--to must be a postgres:// or postgresql:// URL');
  // required here: its drivers (pg, ioredis) would otherwise load in every process that imports the CLI, workers included
  const { applyMigrations, copyLmdbToPostgres, NonEmptyTarget } = require('./store/postgres/admin') as typeof import('./store/postgres/admin');
  if (values.from === undefined) {
    if (values.force) throw new UsageError('--force only applies with --from');
    const applied = await applyMigrations(target);
    print(json, { applied }, applied.length ? `applied schema migrations ${applied.join(', ')}` : 'the database schema is current');
    return;
  }
  if (!existsSync(join(values.from, 'tollgate.lmdb'))) throw new UsageError(`--from ${values.from} is not a Tollgate data dir (no tollgate.lmdb in it)`);
  try {
    const result = await copyLmdbToPostgres(values.from, target, values.force === true);
    const { copied } = result;
    print(json, result, `copied ${copied.accounts} accounts, ${copied.access_tokens} access tokens, ${copied.keys} keys, `
      + `${copied.usage_records} usage records and ${copied.video_tasks} video tasks; counts and sums verified `
      + `(balances ${copied.balance}, usage ${copied.usage_quota} quota). The nodes need the master secret of ${values.from}.`);
  } catch (error) {
    if (error instanceof NonEmptyTarget) throw new UsageError(error.message);
    throw error;
  }
}

async function adminCommand(config: Config, args: string[]): Promise<void> {
  const [action, ...rest] = args;
  const { values } = parsedFlags(() => parseArgs({ args: rest, allowPositionals: false, options: { json: { type: 'boolean' }, config: { type: 'string' } } }));
  const json = values.json === true;
  const store = await openStore(config);
  try {
    switch (action) {
      case 'token': {
        const token = await issueAdminToken(store, 'cli');
        await store.audit.append({ actor: 'cli', action: 'admin_token.issue', account_id: null, details: {} });
        print(json, { admin_token: token }, `admin token (send as "Authorization: <token>" on /api/admin/*): ${token}`);
        return;
      }
      case 'revoke-tokens': {
        const revoked = await store.admin.revokeTokens();
        await store.audit.append({ actor: 'cli', action: 'admin_token.revoke', account_id: null, details: { revoked } });
        print(json, { revoked }, `revoked ${revoked} admin token(s)`);
        return;
      }
      default:
        throw new UsageError(`unknown admin command "${action ?? ''}"`);
    }
  } finally {
    await store.close();
  }
}

/** Signals the running supervisor (its pid file in the data dir) and reports its reload from the audit log. */
async function reloadCommand(config: Config, args: string[]): Promise<void> {
  const { values } = parsedFlags(() => parseArgs({ args, allowPositionals: false, options: { json: { type: 'boolean' }, config: { type: 'string' } } }));
  let pid: number;
  try { pid = Number(readFileSync(pidFile(config.dataDir), 'utf8').trim()); } catch {
    throw new UsageError(`no running tollgate serve found for data dir ${config.dataDir} (no ${pidFile(config.dataDir)})`);
  }
  const store = await openStore(config);
  try {
    const before = (await store.audit.list({}, 0, 1)).items[0]?.id ?? 0;
    try { process.kill(pid, 'SIGHUP'); } catch {
      throw new UsageError(`tollgate serve (pid ${pid}, from ${pidFile(config.dataDir)}) is not running`);
    }
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      const entry = (await store.audit.list({}, 0, 20)).items.find((item) => item.id > before && item.actor === 'supervisor'
        && (item.action === 'reload' || item.action === 'reload.refused'));
      if (entry) {
        const ok = entry.action === 'reload';
        print(values.json === true, { ok, ...entry.details }, ok ? `config reloaded (generation ${String(entry.details.generation)})` : `config not reloaded: ${String(entry.details.error)}`);
        if (!ok) process.exitCode = 1;
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new UsageError('the server did not report the reload within 20 s');
  } finally {
    await store.close();
  }
}

function configPathFrom(args: string[]): string | undefined {
  const index = args.indexOf('--config');
  if (index !== -1) {
    const path = args[index + 1];
    if (!path) throw new UsageError('--config needs a path');
    return path;
  }
  const inline = args.find((arg) => arg.startsWith('--config='));
  return inline ? inline.slice('--config='.length) : undefined;
}

export async function main(argv: string[]): Promise<void> {
  const [command, ...args] = argv;
  const configPath = configPathFrom(args) ?? process.env.TOLLGATE_CONFIG;
  const config = loadConfig({ path: configPath });
  switch (command) {
    case 'serve': case undefined: await runSupervisor(config, configPath); return;
    case 'worker': await runWorker(config); return;
    case 'account': await accountCommand(config, args); return;
    case 'admin': await adminCommand(config, args); return;
    case 'reload': await reloadCommand(config, args); return;
    case 'config': process.stdout.write(`${JSON.stringify(redacted(config), null, 2)}\n`); return;
    case 'migrate': await migrateCommand(config, args); return;
    case 'help': case '--help': case '-h': process.stdout.write(`${USAGE}\n`); return;
    default: throw new UsageError(`unknown command "${command}"`);
  }
}

// Entry: run directly, through the `bin/tollgate` launcher (then require.main is the launcher), or as a forked worker.
const launchedByBin = require.main?.filename === join(__dirname, '..', '..', 'bin', 'tollgate');
if (require.main === module || launchedByBin || process.env.TOLLGATE_ROLE === 'worker') {
  main(process.argv.slice(2)).catch((error: unknown) => {
    if (error instanceof UsageError) process.stderr.write(`tollgate: ${error.message}\n${USAGE}\n`);
    else if (error instanceof ConfigError) process.stderr.write(`tollgate: configuration error: ${error.message}\n`);
    else process.stderr.write(`tollgate: ${(error as Error)?.stack ?? String(error)}\n`);
    process.exit(error instanceof UsageError ? 64 : 1);
  });
}
