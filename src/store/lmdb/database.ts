// The only module family that imports lmdb. One env in the data dir, shared by every process and
// thread; msgpack records with shared structures; a schema-version key; id counters.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { makePrivate } from '../data-dir';
import type { GatedOpener } from './open-gate';
import { open, type Database, type RootDatabase } from 'lmdb';

export const SCHEMA_VERSION = 1;
/** the env files in the data dir (each with its `-lock` file) */
export const MAIN_ENV = 'tollgate.lmdb';
export const EPHEMERAL_ENV = 'ephemeral.lmdb';

export interface Databases {
  root: RootDatabase;
  meta: Database<unknown, string>;
  accounts: Database<unknown, number>;
  accountNames: Database<number, string>;
  accessTokens: Database<unknown, string>;
  keys: Database<unknown, number>;
  keyDigests: Database<number, string>;
  accountKeys: Database<string, [number, number]>;
  leaseIndex: Database<true, [string, string, number]>;
  usage: Database<unknown, [number, number]>;
  tasks: Database<unknown, string>;
  /** operator (admin API) tokens: SHA-256 digest hex → record */
  adminTokens: Database<unknown, string>;
  /** the append-only audit log of admin actions, by id */
  audit: Database<unknown, number>;
  /** rate-limit windows and other counters that may be lost on a crash: a second env opened noSync */
  ephemeralRoot: RootDatabase;
  ephemeral: Database<unknown, string>;
}

/**
 * Where msgpackr's shared record structures live in each sub-database. No new structure is ever
 * stored (shouldShareStructure below): saving one runs a nested write from inside the encoder, and
 * with several processes writing at once that path lost commits and handed out duplicate ids in
 * lmdb 3.5 (bench/README.md, "Shared structures"). Records are written self-describing instead; the
 * key stays so that structures an older data dir already holds still decode its records.
 */
const STRUCTURES = Symbol.for('tollgate.structures');
/** Options lmdb hands to msgpackr (its typings do not list shouldShareStructure). */
const RECORD_ENCODING: Record<string, unknown> = {
  encoding: 'msgpack', sharedStructuresKey: STRUCTURES, shouldShareStructure: (): boolean => false,
};

/**
 * Opens the data dir's envs, each while no other process commits to it: through `gate`, which the
 * caller made (it holds the gate's open lock) and closes once this process is a member of the gate
 * (open-gate.ts).
 */
export function openDatabases(dataDir: string, gate: GatedOpener): Databases {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const root = gate.open(MAIN_ENV, () => open({ path: join(dataDir, MAIN_ENV), maxDbs: 16, compression: false, mapSize: 2 * 1024 ** 3 }));
  const ephemeralRoot = gate.open(EPHEMERAL_ENV, () => open({ path: join(dataDir, EPHEMERAL_ENV), noSync: true, maxDbs: 2, compression: false }));
  const sub = <V, K extends import('lmdb').Key>(name: string, options: Record<string, unknown> = {}) =>
    root.openDB<V, K>({ name, ...RECORD_ENCODING, ...options });
  for (const file of ['tollgate.lmdb', 'tollgate.lmdb-lock', 'ephemeral.lmdb', 'ephemeral.lmdb-lock']) makePrivate(join(dataDir, file));
  const databases: Databases = {
    root,
    meta: sub('meta'),
    accounts: sub('accounts'),
    accountNames: sub('account-names'),
    accessTokens: sub('access-tokens'),
    keys: sub('keys'),
    keyDigests: sub('key-digests'),
    accountKeys: sub('account-keys'),
    leaseIndex: sub('lease-index'),
    usage: sub('usage'),
    tasks: sub('tasks'),
    adminTokens: sub('admin-tokens'),
    audit: sub('audit'),
    ephemeralRoot,
    ephemeral: ephemeralRoot.openDB({ name: 'counters', encoding: 'msgpack' }),
  };
  const version = databases.meta.get('schema_version');
  if (version === undefined) databases.meta.putSync('schema_version', SCHEMA_VERSION);
  else if (version !== SCHEMA_VERSION) {
    throw new Error(`data dir ${dataDir} has schema version ${String(version)}; this Tollgate reads version ${SCHEMA_VERSION}`);
  }
  return databases;
}

/** Next value of a named id counter. Must run inside a write transaction. */
export function nextId(databases: Databases, counter: string): number {
  const key = `seq:${counter}`;
  const next = ((databases.meta.get(key) as number | undefined) ?? 0) + 1;
  databases.meta.putSync(key, next);
  return next;
}
