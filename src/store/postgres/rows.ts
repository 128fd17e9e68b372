// Rows of the PostgreSQL tables as the records the gateway uses (src/store/records.ts).
import type { AccessTokenRecord, AccountRecord, KeyRecord, UsageRecord } from '../records';

export const ACCOUNT_COLUMNS = 'id, name, grp, balance, used_quota, created_time, leased, epoch';
export const KEY_COLUMNS = 'id, account_id, digest, sealed_iv, sealed_tag, sealed_data, masked, name, remain_quota, unlimited_quota, '
  + 'expired_time, grp, billing_type, models, remark, status, used_quota, created_time, leased, epoch';
export const USAGE_COLUMNS = 'id, time, account_id, key_id, key_name, model, channel, endpoint, prompt_tokens, completion_tokens, '
  + 'cache_read_tokens, cache_creation_tokens, quota, latency_ms, first_byte_ms, status, end_reason, usage_source, stream';

type Row = Record<string, unknown>;

/**
 * `leases` (per worker) is not filled in: on PostgreSQL the leases are rows of their own, and no
 * caller outside the store reads the map.
 */
export function accountOf(row: Row): AccountRecord {
  return {
    id: row.id as number, name: row.name as string, group: row.grp as string, balance: row.balance as number,
    used_quota: row.used_quota as number, created_time: row.created_time as number, leased: row.leased as number, leases: {},
    epoch: row.epoch as number,
  };
}

export function keyOf(row: Row): KeyRecord {
  return {
    id: row.id as number, account_id: row.account_id as number, digest: row.digest as string,
    sealed: { iv: row.sealed_iv as Buffer, tag: row.sealed_tag as Buffer, data: row.sealed_data as Buffer },
    masked: row.masked as string, name: row.name as string, remain_quota: row.remain_quota as number,
    unlimited_quota: row.unlimited_quota as boolean, expired_time: row.expired_time as number, group: row.grp as string,
    billing_type: row.billing_type as KeyRecord['billing_type'], models: row.models as string, remark: row.remark as string,
    status: row.status as KeyRecord['status'], used_quota: row.used_quota as number, created_time: row.created_time as number,
    leased: row.leased as number, leases: {}, epoch: row.epoch as number,
  };
}

export function accessTokenOf(row: Row): AccessTokenRecord {
  return { account_id: row.account_id as number, scope: row.scope as AccessTokenRecord['scope'], created_time: row.created_time as number };
}

export function usageOf(row: Row): UsageRecord {
  return {
    id: row.id as number, time: row.time as number, account_id: row.account_id as number, key_id: row.key_id as number,
    key_name: row.key_name as string, model: row.model as string, channel: row.channel as string, endpoint: row.endpoint as string,
    prompt_tokens: row.prompt_tokens as number, completion_tokens: row.completion_tokens as number,
    cache_read_tokens: row.cache_read_tokens as number, cache_creation_tokens: row.cache_creation_tokens as number,
    quota: row.quota as number, latency_ms: row.latency_ms as number, first_byte_ms: row.first_byte_ms as number | null,
    status: row.status as number, end_reason: row.end_reason as string, usage_source: row.usage_source as UsageRecord['usage_source'],
    stream: row.stream as boolean,
  };
}
