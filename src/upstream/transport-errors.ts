// Upstream failures mapped in one place: HTTP status of the upstream → gateway error with a
// retryable default; transport codes → 502/503/504. Messages never carry the channel's key.
import { GatewayError, isGatewayError } from '../errors';
import { redactSecrets } from '../formats/redact';

export function fromTransportError(error: unknown, channel: string): GatewayError {
  if (isGatewayError(error)) return error instanceof GatewayError ? error : new GatewayError(error);   // already said what went wrong (a bound on the answer, a translation)
  const name = (error as Error)?.name;
  // an abort reason is a DOMException whose numeric legacy `code` (20) says nothing: go by its name
  const code = name === 'AbortError' ? name : (error as { code?: string })?.code ?? name ?? 'unknown';
  switch (code) {
    case 'UND_ERR_CONNECT_TIMEOUT':
      return new GatewayError({ status: 504, type: 'api_error', code: 'upstream_connect_timeout', message: `upstream channel ${channel} did not accept the connection in time`, retryable: true });
    case 'UND_ERR_HEADERS_TIMEOUT':
      return new GatewayError({ status: 504, type: 'api_error', code: 'upstream_timeout', message: `upstream channel ${channel} sent no response in time (first-byte timeout)`, retryable: true });
    case 'UND_ERR_BODY_TIMEOUT':
      return new GatewayError({ status: 504, type: 'api_error', code: 'upstream_idle_timeout', message: `upstream channel ${channel} went silent mid-response (idle timeout)`, retryable: true });
    case 'ECONNREFUSED': case 'ENOTFOUND': case 'EAI_AGAIN': case 'EHOSTUNREACH': case 'ENETUNREACH':
      return new GatewayError({ status: 502, type: 'api_error', code: 'upstream_unreachable', message: `upstream channel ${channel} is unreachable`, retryable: true });
    case 'AbortError': case 'UND_ERR_ABORTED':
      return new GatewayError({ status: 499, type: 'api_error', code: 'client_closed', message: 'the client closed the request', retryable: false });
    default:
      return new GatewayError({ status: 502, type: 'api_error', code: 'upstream_connection_error', message: `upstream channel ${channel} failed: connection error (${code})`, retryable: true });
  }
}

/** Best-effort message of an upstream error body (OpenAI or Anthropic shape); its caller redacts and bounds it. */
export function upstreamMessage(text: string): string | undefined {
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    const message = typeof parsed.error === 'object' ? parsed.error?.message : parsed.error ?? parsed.message;
    return typeof message === 'string' ? message : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `secrets`: the channel's keys and URL (redact.ts upstreamSecrets). An upstream's 4xx message reaches
 * the client, so it is shown with those and anything key-shaped redacted (an upstream that echoes the
 * key it was sent), then cut to 500 characters.
 */
export function fromUpstreamStatus(status: number, bodyText: string, channel: string, secrets: readonly string[] = []): GatewayError {
  if (status === 401 || status === 403) {
    // The channel's own credentials are bad: never a 401 to the client. Another channel may work.
    return new GatewayError({ status: 502, type: 'api_error', code: 'upstream_auth_failed', message: `upstream channel ${channel} rejected the gateway's credentials (HTTP ${status}); the operator must fix the channel key`, retryable: true });
  }
  if (status === 429) {
    return new GatewayError({ status: 429, type: 'rate_limit_error', code: 'upstream_rate_limited', message: `upstream channel ${channel} is rate limiting requests; retry later`, retryable: true, headers: { 'retry-after': '1' } });
  }
  if (status === 529) {
    // Anthropic's "overloaded": its clients know it (and back off); others see it as a 503
    return new GatewayError({ status: 529, type: 'api_error', code: 'upstream_overloaded', message: `upstream channel ${channel} is overloaded; retry later`, retryable: true });
  }
  if (status === 408 || status >= 500) {
    return new GatewayError({ status: 502, type: 'api_error', code: 'upstream_error', message: `upstream channel ${channel} failed with HTTP ${status}`, retryable: true });
  }
  const upstream = upstreamMessage(bodyText);
  const message = upstream === undefined ? `upstream rejected the request with HTTP ${status}` : redactSecrets(upstream, secrets).slice(0, 500);
  return new GatewayError({ status: status === 404 ? 404 : 400, type: 'invalid_request_error', code: status === 404 ? 'model_not_found' : 'upstream_bad_request', message, retryable: false });
}
