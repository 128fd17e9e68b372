// Request framing, checked by both fronts before a handler runs (RFC 9112 §6). A message whose body
// length two parsers could read differently (two Content-Length values, a transfer coding other than
// chunked) is refused and its connection closed: whatever follows on it cannot be trusted to be the
// next request, so it is never parsed as one. So is one whose target host two parsers could read
// differently (two Host headers, RFC 9112 §3.2), and one with an expectation the gateway cannot meet.
// A credential sent twice (two Authorization or two x-api-key lines) is refused too, and so are two
// Content-Type lines: the fronts read them differently (node:http keeps the first Authorization and
// Content-Type and joins x-api-key lines, uSockets keeps the last of each), so which key or account a
// call was charged to, or which multipart boundary its form was read with, would depend on the front.

/**
 * Header lines a request may carry. uSockets holds 50 entries per request (the request line and 49
 * header lines, one of which marks the end), so a 49th line is the first it cannot parse; both fronts
 * refuse more than this with a 431 that names the limit.
 */
export const MAX_HEADER_COUNT = 48;

export interface FramingRefusal {
  status: 400 | 417 | 431;
  message: string;
}

const DIGITS = /^[0-9]{1,15}$/;

/**
 * What the framing headers of one request say, gathered while its headers are read: every
 * Content-Length, Transfer-Encoding and Expect value (a repeated header is several values), the
 * Host lines and the count.
 */
export class FramingHeaders {
  lengths: string[] | null = null;
  encodings: string[] | null = null;
  expectations: string[] | null = null;
  hosts = 0;
  /** Authorization, x-api-key and Content-Type lines */
  authorizations = 0;
  apiKeys = 0;
  contentTypes = 0;
  count = 0;

  /** Feed every header (lower-case name); cheap enough for the per-request path: seven compares. */
  add(name: string, value: string): void {
    this.count += 1;
    if (name === 'content-length') (this.lengths ??= []).push(value);
    else if (name === 'transfer-encoding') (this.encodings ??= []).push(value);
    else if (name === 'host') this.hosts += 1;
    else if (name === 'authorization') this.authorizations += 1;
    else if (name === 'x-api-key') this.apiKeys += 1;
    else if (name === 'content-type') this.contentTypes += 1;
    else if (name === 'expect') (this.expectations ??= []).push(value);
  }

  /**
   * The refusal this request's framing earns, or null when its body length and host are
   * unambiguous. `hostRequired`: the request is HTTP/1.1, which must carry a Host (the uWS front
   * passes false: uSockets drops such a request before JavaScript sees it).
   */
  refusal(hostRequired = false): FramingRefusal | null {
    if (this.count > MAX_HEADER_COUNT) {
      return { status: 431, message: `request has ${this.count} header lines; the limit is ${MAX_HEADER_COUNT}` };
    }
    if (this.hosts > 1) return { status: 400, message: 'request has more than one Host header (RFC 9112 §3.2)' };
    if (this.hosts === 0 && hostRequired) return { status: 400, message: 'an HTTP/1.1 request must have a Host header (RFC 9112 §3.2)' };
    if (this.authorizations > 1) return { status: 400, message: 'request has more than one Authorization header: send one credential' };
    if (this.apiKeys > 1) return { status: 400, message: 'request has more than one x-api-key header: send one credential' };
    if (this.contentTypes > 1) return { status: 400, message: 'request has more than one Content-Type header' };
    const lengths = this.lengths;
    const encodings = this.encodings;
    if (lengths !== null && encodings !== null) {
      return { status: 400, message: 'request has both Content-Length and Transfer-Encoding; send one (RFC 9112 §6.3)' };
    }
    if (lengths !== null) {
      if (lengths.length > 1) return { status: 400, message: 'request has more than one Content-Length header (RFC 9112 §6.3)' };
      if (!DIGITS.test(lengths[0])) return { status: 400, message: 'Content-Length must be a decimal number of bytes' };
    }
    if (encodings !== null) {
      const coding = encodings.length === 1 ? encodings[0].trim().toLowerCase() : '';
      if (coding !== 'chunked') {
        // 400 rather than RFC 9112's suggested 501: bad input from a client is a 4xx here, always
        return { status: 400, message: `Transfer-Encoding "${printable(encodings.join(', '))}" is not supported: only "chunked" is (RFC 9112 §6.1)` };
      }
    }
    const expectations = this.expectations;
    if (expectations !== null && expectations.some((value) => value.trim().toLowerCase() !== '100-continue')) {
      // answered before the body is read: a client waiting for 100 Continue sees why it never comes
      return { status: 417, message: `Expect "${printable(expectations.join(', '))}" cannot be met: only "100-continue" is supported (RFC 9110 §10.1.1)` };
    }
    return null;
  }
}

/** A client's header value as it may appear in an error message: bounded, control bytes removed. */
function printable(text: string): string {
  // eslint-disable-next-line no-control-regex
  const clean = text.replace(/[\u0000-\u001f\u007f"\\]/g, '?');
  return clean.length > 64 ? `${clean.slice(0, 64)}…` : clean;
}
