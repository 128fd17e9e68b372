// Record shapes stored in LMDB (msgpack). Quota amounts are integers in quota units (500000 = 1 USD).
import type { SealedValue } from '../auth/secrets';
import { ByteWriter, JsonStringBytes, MAX_NUMBER_BYTES } from '../formats/json-bytes';

export interface LeaseHolder {
  /** sum of all outstanding worker leases */
  leased: number;
  /** workerId → quota leased to that worker */
  leases: Record<string, number>;
  /** bumped when an owner changes the cap; leases of an older epoch cannot be drawn on */
  epoch: number;
}

export interface AccountRecord extends LeaseHolder {
  id: number;
  name: string;
  group: string;
  balance: number;
  used_quota: number;
  created_time: number;
}

export type AccessScope = 'read' | 'write';

export interface AccessTokenRecord {
  account_id: number;
  scope: AccessScope;
  created_time: number;
}

export interface KeyFields {
  name: string;
  remain_quota: number;
  unlimited_quota: boolean;
  expired_time: number;
  group: string;
  billing_type: 1 | 2 | 4;
  models: string;
  remark: string;
}

export interface KeyRecord extends KeyFields, LeaseHolder {
  id: number;
  account_id: number;
  sealed: SealedValue;
  masked: string;
  digest: string;
  status: 1 | 2;
  used_quota: number;
  created_time: number;
}

export interface UsageRecord {
  id: number;
  time: number;
  account_id: number;
  key_id: number;
  key_name: string;
  model: string;
  channel: string;
  endpoint: string;
  prompt_tokens: number;
  completion_tokens: number;
  cache_read_tokens: number;
  cache_creation_tokens: number;
  quota: number;
  latency_ms: number;
  first_byte_ms: number | null;
  status: number;
  end_reason: string;
  usage_source: 'upstream' | 'estimated' | 'per_call';
  stream: boolean;
}

/**
 * A usage record as a row: the values in a fixed order, without the 18 field names. The id comes
 * first; rows of a billing batch carry 0 there and are numbered by position when committed.
 */
export type UsageRow = [
  id: number, time: number, account_id: number, key_id: number, key_name: string, model: string, channel: string,
  endpoint: string, prompt_tokens: number, completion_tokens: number, cache_read_tokens: number, cache_creation_tokens: number,
  quota: number, latency_ms: number, first_byte_ms: number | null, status: number, end_reason: string,
  usage_source: UsageRecord['usage_source'], stream: boolean,
];

/** Index of account_id in a UsageRow. */
const ROW_ACCOUNT = 2;

export function toUsageRow(record: Omit<UsageRecord, 'id'>): UsageRow {
  return [
    0, record.time, record.account_id, record.key_id, record.key_name, record.model, record.channel, record.endpoint,
    record.prompt_tokens, record.completion_tokens, record.cache_read_tokens, record.cache_creation_tokens, record.quota,
    record.latency_ms, record.first_byte_ms, record.status, record.end_reason, record.usage_source, record.stream,
  ];
}

export function fromUsageRow(row: UsageRow): UsageRecord {
  return {
    id: row[0], time: row[1], account_id: row[2], key_id: row[3], key_name: row[4], model: row[5], channel: row[6],
    endpoint: row[7], prompt_tokens: row[8], completion_tokens: row[9], cache_read_tokens: row[10],
    cache_creation_tokens: row[11], quota: row[12], latency_ms: row[13], first_byte_ms: row[14], status: row[15],
    end_reason: row[16], usage_source: row[17], stream: row[18],
  };
}

/**
 * The usage records of one account in a billing batch, as a worker sends them and as the store
 * keeps them: the JSON text of their rows. Neither the supervisor nor the commit parses or
 * re-encodes it (they pass a string on); only reading the log does.
 */
export interface UsageGroup { account: number; count: number; rows: string }

const rowStrings = new JsonStringBytes();

/** Room a row takes at most besides its strings: 13 numbers, the brackets, commas and literals. */
const ROW_FIXED_BYTES = 13 * MAX_NUMBER_BYTES + 64;

/**
 * Writes a record's row as JSON, exactly JSON.stringify(toUsageRow(record)), field by field into
 * `out` (making its room).
 */
function writeUsageRow(out: ByteWriter, record: Omit<UsageRecord, 'id'>): void {
  const keyName = rowStrings.of(record.key_name);
  const model = rowStrings.of(record.model);
  const channel = rowStrings.of(record.channel);
  const endpoint = rowStrings.of(record.endpoint);
  const endReason = rowStrings.of(record.end_reason);
  const usageSource = rowStrings.of(record.usage_source);
  out.reserve(ROW_FIXED_BYTES + keyName.length + model.length + channel.length + endpoint.length + endReason.length + usageSource.length);
  out.ascii('[0,');
  out.number(record.time); out.byte(COMMA);
  out.number(record.account_id); out.byte(COMMA);
  out.number(record.key_id); out.byte(COMMA);
  out.copy(keyName); out.byte(COMMA);
  out.copy(model); out.byte(COMMA);
  out.copy(channel); out.byte(COMMA);
  out.copy(endpoint); out.byte(COMMA);
  out.number(record.prompt_tokens); out.byte(COMMA);
  out.number(record.completion_tokens); out.byte(COMMA);
  out.number(record.cache_read_tokens); out.byte(COMMA);
  out.number(record.cache_creation_tokens); out.byte(COMMA);
  out.number(record.quota); out.byte(COMMA);
  out.number(record.latency_ms); out.byte(COMMA);
  if (record.first_byte_ms === null) out.ascii('null'); else out.number(record.first_byte_ms);
  out.byte(COMMA);
  out.number(record.status); out.byte(COMMA);
  out.copy(endReason); out.byte(COMMA);
  out.copy(usageSource); out.byte(COMMA);
  out.ascii(record.stream ? 'true]' : 'false]');
}

const COMMA = 0x2c;

/** One account's rows in a batch: the UTF-8 bytes of `[row,row,…`. */
class AccountRows {
  readonly out = new ByteWriter(ROW_BYTES_START);
  count = 0;

  constructor() {
    this.out.reserve(1);
    this.out.byte(0x5b);   // [
  }

  add(record: Omit<UsageRecord, 'id'>): void {
    this.out.reserve(1);
    if (this.count > 0) this.out.byte(COMMA);
    writeUsageRow(this.out, record);
    this.count += 1;
  }

  /** Appends the rows of `later` after these. */
  append(later: AccountRows): void {
    this.out.reserve(later.out.length);
    this.out.byte(COMMA);
    later.out.bytes.copy(this.out.bytes, this.out.length, 1, later.out.length);
    this.out.length += later.out.length - 1;
    this.count += later.count;
  }

  /** the rows as a JSON array */
  text(): string {
    this.out.reserve(1);
    this.out.bytes[this.out.length] = 0x5d;   // ]
    return this.out.bytes.toString('utf8', 0, this.out.length + 1);
  }
}

/** first capacity of an account's rows in a batch (a row is ~200–300 bytes); it doubles as needed */
const ROW_BYTES_START = 2048;

/**
 * The usage rows of a billing batch, grouped by account as they are settled. Each row is written
 * into its account's bytes as it is settled, so no row stays on the JS heap until the commit: a
 * batch lives longer than a young-generation collection's period, and rows kept as strings were
 * copied and promoted by it.
 */
export class UsageRowBatch {
  private byAccount = new Map<number, AccountRows>();
  count = 0;

  add(record: Omit<UsageRecord, 'id'>): void {
    let group = this.byAccount.get(record.account_id);
    if (group === undefined) { group = new AccountRows(); this.byAccount.set(record.account_id, group); }
    group.add(record);
    this.count += 1;
  }

  /** Puts the rows of an earlier batch (one that failed to commit) before this one's. */
  prepend(earlier: UsageRowBatch): void {
    for (const [account, rows] of earlier.byAccount) {
      const later = this.byAccount.get(account);
      if (later !== undefined) rows.append(later);
      this.byAccount.set(account, rows);
    }
    this.count += earlier.count;
  }

  /** Each account's rows, in order, as the JSON text of an array of rows (what packUsageRows gives). */
  groups(): UsageGroup[] {
    const groups: UsageGroup[] = [];
    for (const [account, rows] of this.byAccount) groups.push({ account, count: rows.count, rows: rows.text() });
    return groups;
  }
}

/** Rows of a batch grouped by account, in order, each group as JSON text. */
export function packUsageRows(rows: readonly UsageRow[]): UsageGroup[] {
  const byAccount = new Map<number, UsageRow[]>();
  for (const row of rows) {
    const group = byAccount.get(row[ROW_ACCOUNT]);
    if (group === undefined) byAccount.set(row[ROW_ACCOUNT], [row]); else group.push(row);
  }
  const groups: UsageGroup[] = [];
  for (const [account, group] of byAccount) groups.push({ account, count: group.length, rows: JSON.stringify(group) });
  return groups;
}

/** A stored usage entry of several records: ids `first`, `first + 1`, … in row order. */
export interface StoredUsageGroup { first: number; rows: string }
