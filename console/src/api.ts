// Calls to the gateway's own APIs (same origin), in the key API's envelope {success, message, data}.
// Every failure becomes an ApiError whose message is the API's own words, so a page can show it next
// to what caused it; `field` names the form field a validation message is about.
export class ApiError extends Error {
  constructor(message: string, readonly status: number, readonly code?: string, readonly retryAfterSeconds?: number) {
    super(message);
    this.name = 'ApiError';
  }

  /** The key field a validation message names ("remain_quota must not be negative" → remain_quota). */
  get field(): string | undefined {
    return fieldOf(this.message);
  }

  /** The token was refused as a whole: the session is over. */
  get signedOut(): boolean {
    return this.status === 401 || this.message === 'access token is invalid';
  }
}

const FIELDS = ['name', 'remain_quota', 'unlimited_quota', 'expired_time', 'group', 'billing_type', 'models', 'remark',
  'quota', 'usd', 'balance', 'note', 'scope', 'keyword', 'model', 'status'];

export function fieldOf(message: string): string | undefined {
  const first = /^([a-z_]+)\b/.exec(message)?.[1];
  return first !== undefined && FIELDS.includes(first) ? first : undefined;
}

type Listener = (error: ApiError) => void;
let onSignedOut: Listener = () => {};
/** Called when any answer says the token is no longer valid. */
export function setSignedOutListener(listener: Listener): void { onSignedOut = listener; }

let currentToken = '';
export function setToken(token: string): void { currentToken = token; }

export interface Envelope<T> { success: boolean; message: string; data: T; code?: string }

/** One call with the session's token (or `token`); resolves with `data`, throws ApiError otherwise. */
export async function api<T>(method: string, path: string, body?: unknown, token = currentToken): Promise<T> {
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers: { authorization: token, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
      credentials: 'omit',
    });
  } catch (error) {
    throw new ApiError(`cannot reach the gateway (${error instanceof Error ? error.message : String(error)})`, 0);
  }
  const text = await response.text();
  let envelope: Envelope<T> | undefined;
  try { envelope = JSON.parse(text) as Envelope<T>; } catch { envelope = undefined; }
  if (!envelope || typeof envelope.success !== 'boolean') {
    throw new ApiError(`the gateway answered HTTP ${response.status} without the API envelope`, response.status);
  }
  if (!response.ok || !envelope.success) {
    const retry = Number(response.headers.get('retry-after'));
    const error = new ApiError(envelope.message || `HTTP ${response.status}`, response.status, envelope.code,
      Number.isFinite(retry) && retry > 0 ? retry : undefined);
    if (error.signedOut && token === currentToken && currentToken !== '') onSignedOut(error);
    throw error;
  }
  return envelope.data;
}

export interface PageOf<T> { items: T[]; total: number; page: number; page_size: number }

export interface KeyObject {
  id: number; name: string; key: string; status: 1 | 2; remain_quota: number; unlimited_quota: boolean;
  used_quota: number; expired_time: number; group: string; billing_type: 1 | 2 | 4; models: string; remark: string;
  created_time: number;
}

export interface GroupInfo { name: string; ratio: number; rpm: number; concurrency: number }

export interface AccountSelf {
  id: number; name: string; group: string; balance: number; balance_usd: number; used_quota: number;
  created_time: number; scope: 'read' | 'write'; groups: GroupInfo[];
}

export interface ModelInfo {
  id: string; owned_by: string; kind: string; billing: 'usage' | 'per_call';
  price: { input?: number; output?: number; cached_input?: number; cache_creation_input?: number; per_call?: number };
  reasoning: boolean; multimodal: boolean; json_mode: boolean; chat_image: boolean; max_output_tokens: number; groups: string[];
}

export interface UsageRecord {
  id: number; time: number; key_id: number; key_name: string; model: string; channel: string; endpoint: string;
  prompt_tokens: number; completion_tokens: number; cache_read_tokens: number; cache_creation_tokens: number;
  quota: number; latency_ms: number; first_byte_ms: number | null; status: number; end_reason: string;
  usage_source: string; stream: boolean;
}

export interface UsageSummary {
  total: { count: number; quota: number; prompt_tokens: number; completion_tokens: number };
  days: Array<{ day: string; model: string; count: number; quota: number }>;
  truncated: boolean;
}

// ---- the operator's admin API (/api/admin/…) ----

export interface AdminAccount {
  id: number; name: string; group: string; balance: number; balance_usd: number; used_quota: number; created_time: number;
}

export interface AdminAccessToken { id: string; scope: 'read' | 'write'; created_time: number }

export interface AdminChannel {
  name: string; type: string; state: 'healthy' | 'cooling' | 'key_refused'; cooling_until: number | null;
  consecutive_failures: number; success: number; failure: number; p50_ms: number | null; priority: number; weight: number;
  models: string[]; keys: Array<{ index: number; state: 'ok' | 'refused' }>;
}

export interface AdminUsageRow {
  day?: string; model?: string; key_id?: number; key_name?: string; account_id?: number;
  requests: number; quota: number; prompt_tokens: number; completion_tokens: number;
}

export interface AdminUsage {
  by: 'day' | 'model' | 'key'; account_id: number | null; from: number; to: number; items: AdminUsageRow[];
  totals: { requests: number; quota: number; prompt_tokens: number; completion_tokens: number }; truncated: boolean;
}

export interface AuditEntry {
  id: number; time: number; actor: string; action: string; account_id: number | null; details: Record<string, unknown>;
}
