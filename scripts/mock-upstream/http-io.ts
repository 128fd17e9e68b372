// Request bodies in, JSON and error bodies out. The mock renders its own errors instead of using
// src/errors.ts on purpose: it plays the provider, so a bug in the gateway's renderer must not be
// mirrored by the fixture the gateway is tested against.
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import busboy from 'busboy';
import type { Dialect, MultipartBody } from './types';

/** Thrown by handlers; the server writes it in the endpoint's dialect. */
export class MockError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code?: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

const JSON_HEADERS = { 'content-type': 'application/json' };

export function sendJson(response: ServerResponse, status: number, body: unknown): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  response.writeHead(status, { ...JSON_HEADERS, 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

function openAIErrorKind(status: number): { type: string; code: string | null } {
  switch (status) {
    case 401: return { type: 'invalid_request_error', code: 'invalid_api_key' };
    case 403: return { type: 'invalid_request_error', code: 'permission_denied' };
    case 404: return { type: 'invalid_request_error', code: 'not_found' };
    case 429: return { type: 'requests', code: 'rate_limit_exceeded' };
    default: return status >= 500 ? { type: 'server_error', code: null } : { type: 'invalid_request_error', code: null };
  }
}

function anthropicErrorType(status: number): string {
  switch (status) {
    case 401: return 'authentication_error';
    case 402: return 'billing_error';
    case 403: return 'permission_error';
    case 404: return 'not_found_error';
    case 413: return 'request_too_large';
    case 429: return 'rate_limit_error';
    case 529: return 'overloaded_error';
    default: return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

function videoErrorCode(status: number): string {
  switch (status) {
    case 400: return 'INVALID_PROMPT';
    case 401: return 'UNAUTHORIZED';
    case 404: return 'TASK_NOT_FOUND';
    case 429: return 'QUOTA_EXCEEDED';
    default: return 'INTERNAL_ERROR';
  }
}

export function errorBody(dialect: Dialect, error: MockError): unknown {
  switch (dialect) {
    case 'openai': {
      const kind = openAIErrorKind(error.status);
      return { error: { message: error.message, type: kind.type, param: error.field ?? null, code: error.code ?? kind.code } };
    }
    case 'anthropic':
      return { type: 'error', error: { type: anthropicErrorType(error.status), message: error.message } };
    case 'video':
      return {
        success: false, message: error.message, error_code: error.code ?? videoErrorCode(error.status),
        details: { field: error.field ?? null, reason: error.message },
      };
  }
}

export function sendError(response: ServerResponse, dialect: Dialect, error: MockError): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  sendJson(response, error.status, errorBody(dialect, error));
}

export function readRaw(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
    request.on('error', reject);
    request.on('close', () => {
      if (!request.complete) reject(new Error('request closed before its body ended'));
    });
  });
}

/** JSON when it parses, the raw text when it does not, undefined when empty. */
export function parseText(raw: Buffer): unknown {
  if (raw.length === 0) return undefined;
  const text = raw.toString('utf8');
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function isMultipart(request: IncomingMessage): boolean {
  const type = request.headers['content-type'];
  return typeof type === 'string' && type.toLowerCase().startsWith('multipart/form-data');
}

/** Parse multipart with busboy; files are hashed, not kept, so tests can check the bytes arrived. */
export function parseMultipart(request: IncomingMessage): Promise<MultipartBody> {
  return new Promise((resolve, reject) => {
    const result: MultipartBody = { fields: {}, files: [] };
    let pendingFiles = 0;
    let parserDone = false;
    const settle = (): void => {
      if (parserDone && pendingFiles === 0) resolve(result);
    };
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: request.headers });
    } catch (error) {
      reject(new MockError(400, `Invalid multipart request: ${(error as Error).message}`));
      return;
    }
    parser.on('field', (name, value) => {
      (result.fields[name] ??= []).push(value);
    });
    parser.on('file', (name, stream, info) => {
      pendingFiles += 1;
      const hash = createHash('sha256');
      let size = 0;
      stream.on('data', (chunk: Buffer) => {
        size += chunk.length;
        hash.update(chunk);
      });
      stream.on('end', () => {
        result.files.push({ field: name, filename: info.filename ?? '', mimeType: info.mimeType, size, sha256: hash.digest('hex') });
        pendingFiles -= 1;
        settle();
      });
    });
    parser.on('close', () => {
      parserDone = true;
      settle();
    });
    parser.on('error', (error: Error) => reject(new MockError(400, `Invalid multipart request: ${error.message}`)));
    request.on('error', reject);
    request.pipe(parser);
  });
}

/** decodeURIComponent that keeps malformed escapes as sent instead of throwing. */
export function decodePathPart(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

/** The body as an object, or a 400 in the endpoint's dialect (real providers reject non-objects). */
export function requireObject(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new MockError(400, 'We could not parse the JSON body of your request. Expected a JSON object.');
  }
  return body as Record<string, unknown>;
}
