// Record shapes stored in LMDB (msgpack). Quota amounts are integers in quota units (500000 = 1 USD).
import type { SealedValue } from '../auth/secrets';

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
