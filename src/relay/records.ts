// One usage record per model call (DESIGN §5).
import type { Caller } from '../auth/api-key';
import type { ModelConfig } from '../config';
import type { UsageRecord } from '../store';

export interface RecordInput {
  caller: Caller;
  model: ModelConfig;
  channel: string;
  endpoint: string;
  startedAt: number;
  firstByteAt: number | null;
  promptTokens: number;
  completionTokens: number;
  cacheReadTokens?: number;
  cacheCreationTokens?: number;
  quota: number;
  status: number;
  endReason: string;
  usageSource: UsageRecord['usage_source'];
  stream: boolean;
}

export function usageRecord(input: RecordInput, now = Date.now()): Omit<UsageRecord, 'id'> {
  return {
    time: Math.floor(now / 1000),
    account_id: input.caller.account.id,
    key_id: input.caller.key.id,
    key_name: input.caller.key.name,
    model: input.model.id,
    channel: input.channel,
    endpoint: input.endpoint,
    prompt_tokens: input.promptTokens,
    completion_tokens: input.completionTokens,
    cache_read_tokens: input.cacheReadTokens ?? 0,
    cache_creation_tokens: input.cacheCreationTokens ?? 0,
    quota: input.quota,
    latency_ms: now - input.startedAt,
    first_byte_ms: input.firstByteAt === null ? null : input.firstByteAt - input.startedAt,
    status: input.status,
    end_reason: input.endReason,
    usage_source: input.usageSource,
    stream: input.stream,
  };
}
