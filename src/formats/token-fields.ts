// Key-management payloads (spec §2.2, DESIGN §4): create/replace field parsing with defaults and
// validation messages that say what to fix, and the public key object. Pure.
import type { KeyFields, KeyRecord } from '../store';

export const MAX_NAME_LENGTH = 50;
export const MAX_REMARK_LENGTH = 255;
export const MAX_MODELS_LENGTH = 4096;
export const MAX_REMAIN_QUOTA = 5e14;
export const BILLING_TYPES = [1, 2, 4] as const;

export const KEY_DEFAULTS: Readonly<KeyFields> = Object.freeze({
  name: 'default', remain_quota: 0, unlimited_quota: false, expired_time: -1, group: 'default',
  billing_type: 4, models: '', remark: '',
});

/** A domain validation failure: HTTP 200, success:false, this message. */
export class FieldError extends Error {}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

function text(body: Record<string, unknown>, field: keyof KeyFields, max: number): string {
  const value = body[field];
  if (value === undefined) return KEY_DEFAULTS[field] as string;
  if (typeof value !== 'string') throw new FieldError(`${field} must be a string`);
  // characters as a person counts them (code points): an emoji is one, not two UTF-16 units
  if (value.length > max) {
    const characters = [...value].length;
    if (characters > max) throw new FieldError(`${field} is too long: at most ${max} characters (got ${characters})`);
  }
  if (CONTROL.test(value)) throw new FieldError(`${field} must not contain control characters`);
  return value;
}

function integer(body: Record<string, unknown>, field: keyof KeyFields): number {
  const value = body[field];
  if (value === undefined) return KEY_DEFAULTS[field] as number;
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    throw new FieldError(`${field} must be an integer (got ${value === null ? 'null' : typeof value === 'number' ? String(value) : typeof value})`);
  }
  return value;
}

export interface FieldContext {
  groups: ReadonlySet<string>;
  now: number; // unix seconds
  /**
   * On an update, the key's stored expired_time: sending it back unchanged is accepted even once it
   * has passed (the spec's GET → edit → PUT of an expired key). Any other past time is refused.
   */
  storedExpiry?: number;
}

/** Create and full-update payloads: every editable field; an omitted field takes its default. */
export function parseKeyFields(body: Record<string, unknown>, context: FieldContext): KeyFields {
  let name = text(body, 'name', MAX_NAME_LENGTH);
  if (name.trim() === '') name = KEY_DEFAULTS.name;
  const remainQuota = integer(body, 'remain_quota');
  if (remainQuota < 0) throw new FieldError('remain_quota must not be negative');
  if (remainQuota > MAX_REMAIN_QUOTA) throw new FieldError(`remain_quota must be at most ${MAX_REMAIN_QUOTA}`);
  const unlimited = body.unlimited_quota;
  if (unlimited !== undefined && typeof unlimited !== 'boolean') throw new FieldError('unlimited_quota must be true or false');
  const expiredTime = integer(body, 'expired_time');
  if (expiredTime < -1) throw new FieldError('expired_time must be -1 (never), 0 (never) or a future Unix time in seconds');
  if (expiredTime > 0 && expiredTime <= context.now && expiredTime !== context.storedExpiry) throw new FieldError('expired_time is in the past: give a future Unix time in seconds, or -1 for never');
  const group = text(body, 'group', 64) || KEY_DEFAULTS.group;
  if (!context.groups.has(group)) throw new FieldError(`group "${group}" does not exist (known: ${[...context.groups].join(', ')})`);
  const billingType = integer(body, 'billing_type');
  if (!(BILLING_TYPES as readonly number[]).includes(billingType)) {
    throw new FieldError('billing_type must be 1 (usage-based), 2 (per-call) or 4 (usage first)');
  }
  const models = text(body, 'models', MAX_MODELS_LENGTH)
    .split(',').map((model) => model.trim()).filter((model) => model !== '').join(',');
  return {
    name, remain_quota: remainQuota, unlimited_quota: unlimited === true, expired_time: expiredTime, group,
    billing_type: billingType as KeyFields['billing_type'], models, remark: text(body, 'remark', MAX_REMARK_LENGTH),
  };
}

export function parseStatus(value: unknown): 1 | 2 {
  if (value !== 1 && value !== 2) throw new FieldError('status must be 1 (enabled) or 2 (disabled)');
  return value;
}

/** An id in a JSON body: a positive integer number (a string is a wrong type, as for every field). */
export function parseId(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new FieldError(`id must be a positive integer (got ${value === null ? 'null' : typeof value === 'number' ? String(value) : typeof value})`);
  }
  return value;
}

/** An id in a path: digits only. */
export function parsePathId(text: string | undefined): number {
  if (text === undefined || !/^\d{1,15}$/.test(text) || Number(text) < 1) throw new FieldError('id must be a positive integer (in the path)');
  return Number(text);
}

/** The public key object; `key` is the masked form (the full value only comes from reveal). */
export function keyView(record: KeyRecord): Record<string, unknown> {
  return {
    id: record.id, name: record.name, key: record.masked, status: record.status,
    remain_quota: record.remain_quota, unlimited_quota: record.unlimited_quota, used_quota: record.used_quota,
    expired_time: record.expired_time, group: record.group, billing_type: record.billing_type,
    models: record.models, remark: record.remark, created_time: record.created_time,
  };
}
