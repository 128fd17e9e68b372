// How amounts and times read on every page: quota with its USD value (500000 quota = 1 USD), times
// in the browser's local time zone.
export const QUOTA_PER_USD = 500_000;

/**
 * The browser's locale, or en-US when it has none Intl accepts (Chromium under LANG=C reports
 * `en-US@posix`, and every toLocaleString would throw).
 */
export const LOCALE: string | undefined = (() => {
  try { new Intl.NumberFormat(undefined).format(1); return undefined; } catch { return 'en-US'; }
})();

const integerFormat = new Intl.NumberFormat(LOCALE, { maximumFractionDigits: 0 });

export function quotaText(quota: number): string {
  return integerFormat.format(quota);
}

/** a count: calls, tokens */
export const countText = quotaText;

export function usdAmount(usd: number, maximumFractionDigits = 2): string {
  return `$${usd.toLocaleString(LOCALE, { minimumFractionDigits: Math.min(2, maximumFractionDigits), maximumFractionDigits })}`;
}

export function dayText(unixSeconds: number, short = false, utc = false): string {
  return new Date(unixSeconds * 1000).toLocaleDateString(LOCALE, {
    ...(short ? { month: 'short', day: 'numeric' } : {}), ...(utc ? { timeZone: 'UTC' } : {}),
  });
}

/** USD with cents, more digits for amounts under a cent so a small charge never reads $0.00. */
export function usdText(quota: number): string {
  const usd = quota / QUOTA_PER_USD;
  const digits = usd !== 0 && Math.abs(usd) < 0.01 ? 6 : 2;
  return usdAmount(usd, digits);
}

/** "1,000,000 ($2.00)" */
export function quotaWithUsd(quota: number): string {
  return `${quotaText(quota)} (${usdText(quota)})`;
}

/** USD per 1M tokens or per call, as configured */
export function priceText(usd: number | undefined): string {
  if (usd === undefined) return '—';
  return usdAmount(usd, 6);
}

export function localTime(unixSeconds: number): string {
  return new Date(unixSeconds * 1000).toLocaleString(LOCALE, {
    year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit',
  });
}

export function expiryText(expiredTime: number): string {
  return expiredTime === -1 || expiredTime === 0 ? 'never' : localTime(expiredTime);
}

const pad = (value: number) => String(value).padStart(2, '0');

/** Unix seconds → the value of an <input type="datetime-local"> (local time, minutes). */
export function toLocalInput(unixSeconds: number): string {
  const date = new Date(unixSeconds * 1000);
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

/** The value of an <input type="datetime-local"> → Unix seconds, or undefined when empty or invalid. */
export function fromLocalInput(value: string): number | undefined {
  if (value === '') return undefined;
  const time = new Date(value).getTime();
  return Number.isFinite(time) ? Math.floor(time / 1000) : undefined;
}

export const BILLING_TYPES: Record<number, string> = { 4: 'Usage first', 1: 'Usage-based', 2: 'Per-call' };
