// A networked store that cannot be reached answers the call with a 503 that says so (never a 500,
// never the database's own message, which may name hosts or users).
import { GatewayError } from '../errors';

export function storeUnavailable(cause?: Error): GatewayError {
  const error = new GatewayError({
    status: 503, type: 'api_error', code: 'store_unavailable', retryable: true,
    message: 'the gateway cannot reach its database right now; retry shortly',
  });
  if (cause) Object.defineProperty(error, 'cause', { value: cause, enumerable: false });
  return error;
}
