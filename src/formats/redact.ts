// Secrets out of text the gateway did not write: upstream error messages shown to clients, and
// client strings written to the logs. Pure, so any module may use it.

/**
 * Key-shaped text: OpenAI and Anthropic keys (sk-…, sk-ant-…), the gateway's own access tokens
 * (tga-…), a Bearer credential, and long runs of base64 or hex that mix letters and digits (32+
 * characters: tokens, not words).
 */
const KEY_SHAPED = /\b(?:sk-ant-|sk-|tga-)[A-Za-z0-9_-]{6,}|\bBearer\s+[^\s"',;]+|(?<![A-Za-z0-9+/_-])(?=[A-Za-z0-9+/_=-]*[0-9])(?=[A-Za-z0-9+/_=-]*[A-Za-z])[A-Za-z0-9+/_-]{32,}={0,2}/gi;

export const REDACTED = '[redacted]';

/** `text` with every one of `secrets` (a channel's keys) and anything key-shaped replaced by [redacted]. */
export function redactSecrets(text: string, secrets: readonly string[] = []): string {
  let redacted = text;
  for (const secret of secrets) {
    if (secret.length >= 4 && redacted.includes(secret)) redacted = redacted.split(secret).join(REDACTED);
  }
  return redacted.replace(KEY_SHAPED, REDACTED);
}

/** A string from a client or an upstream as it may go into a log line: secrets redacted, control characters escaped, at most `max` characters. */
export function forLog(text: string, max = 200): string {
  const bounded = text.length > max * 4 ? text.slice(0, max * 4) : text;
  // eslint-disable-next-line no-control-regex
  const clean = redactSecrets(bounded).replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return clean.length > max ? `${clean.slice(0, max)}…` : clean;
}

/**
 * What of a channel must never reach a client in an upstream's text: its keys, its base URL and
 * that URL's host (an error often names the host alone, or the URL with its slashes escaped).
 */
export function upstreamSecrets(channel: { keys: readonly string[]; base_url: string }): string[] {
  const secrets = [...channel.keys, channel.base_url];
  try {
    const url = new URL(channel.base_url);
    secrets.push(url.host, url.hostname);
  } catch { /* the config validated it; nothing more to add */ }
  // the longest first, so a key's or URL's part never leaves the rest of it showing
  return secrets.filter((secret) => secret.length > 0).sort((a, b) => b.length - a.length);
}
