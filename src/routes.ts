// The whole route table on one screen. Each route names its error dialect and body limit; the
// dispatcher is the one place that turns a thrown error into bytes.
import { renderError, toGatewayError, type ErrorDialect, GatewayError } from './errors';
import type { Exchange } from './http';
import type { GatewayContext } from './context';
import * as health from './handlers/health';
import * as tokens from './handlers/tokens-api';
import { chatCompletions } from './handlers/chat-completions';
import { messages } from './handlers/messages';
import { getModel, listModels } from './handlers/models';
import { usageLog, usageSummary } from './handlers/usage-log';
import * as account from './handlers/account-api';
import { countTokens } from './handlers/count-tokens';
import { deprecationHeaders, videoStatus, videoSubmit } from './handlers/video';
import { consoleHandlers } from './handlers/console';
import { operatorRoutes } from './handlers/admin/routes';

export type RouteHandler = (exchange: Exchange, params: string[], context: GatewayContext) => void | Promise<void>;

export interface Route {
  method: string;
  /** segments; ':' marks a parameter */
  pattern: string;
  dialect: ErrorDialect;
  bodyLimit: 'api' | 'model' | 'multipart' | 'none';
  handler: RouteHandler;
}

/**
 * A handler whose module is required on the route's first request: endpoints most deployments call
 * rarely or never (responses, completions, embeddings, images) stay out of an idle worker's memory.
 */
function onFirstCall(load: () => RouteHandler): RouteHandler {
  let handler: RouteHandler | undefined;
  return (exchange, params, context) => (handler ??= load())(exchange, params, context);
}

export function routeTable(context: GatewayContext): Route[] {
  const video = `/${context.config.video.vendor}/v1/api/video`;
  const consoleFiles = consoleHandlers();
  const routes: Route[] = [
    { method: 'GET', pattern: '/healthz', dialect: 'openai', bodyLimit: 'none', handler: health.healthz },
    { method: 'GET', pattern: '/api/hello', dialect: 'envelope', bodyLimit: 'none', handler: health.hello },
    { method: 'GET', pattern: '/api/token/', dialect: 'envelope', bodyLimit: 'none', handler: tokens.list },
    { method: 'GET', pattern: '/api/token/search', dialect: 'envelope', bodyLimit: 'none', handler: tokens.search },
    { method: 'GET', pattern: '/api/token/:', dialect: 'envelope', bodyLimit: 'none', handler: tokens.get },
    { method: 'POST', pattern: '/api/token/', dialect: 'envelope', bodyLimit: 'api', handler: tokens.create },
    { method: 'POST', pattern: '/api/token/:/key', dialect: 'envelope', bodyLimit: 'api', handler: tokens.reveal },
    { method: 'PUT', pattern: '/api/token/', dialect: 'envelope', bodyLimit: 'api', handler: tokens.update },
    { method: 'DELETE', pattern: '/api/token/:', dialect: 'envelope', bodyLimit: 'api', handler: tokens.remove },
    { method: 'GET', pattern: '/api/log/', dialect: 'envelope', bodyLimit: 'none', handler: usageLog },
    { method: 'GET', pattern: '/api/log/summary', dialect: 'envelope', bodyLimit: 'none', handler: usageSummary },
    { method: 'GET', pattern: '/api/account/', dialect: 'envelope', bodyLimit: 'none', handler: account.self },
    { method: 'GET', pattern: '/api/account/models', dialect: 'envelope', bodyLimit: 'none', handler: account.models },
    { method: 'POST', pattern: '/v1/chat/completions', dialect: 'openai', bodyLimit: 'model', handler: chatCompletions },
    { method: 'POST', pattern: '/v1/messages', dialect: 'anthropic', bodyLimit: 'model', handler: messages },
    { method: 'POST', pattern: '/v1/messages/count_tokens', dialect: 'anthropic', bodyLimit: 'model', handler: countTokens },
    { method: 'POST', pattern: '/v1/responses', dialect: 'openai', bodyLimit: 'model', handler: onFirstCall(() => (require('./handlers/responses') as typeof import('./handlers/responses')).responses) },
    { method: 'POST', pattern: '/v1/completions', dialect: 'openai', bodyLimit: 'model', handler: onFirstCall(() => (require('./handlers/completions') as typeof import('./handlers/completions')).completions) },
    { method: 'POST', pattern: '/v1/embeddings', dialect: 'openai', bodyLimit: 'model', handler: onFirstCall(() => (require('./handlers/embeddings') as typeof import('./handlers/embeddings')).embeddings) },
    { method: 'GET', pattern: '/v1/models', dialect: 'openai', bodyLimit: 'none', handler: listModels },
    { method: 'GET', pattern: '/v1/models/:', dialect: 'openai', bodyLimit: 'none', handler: getModel },
    { method: 'POST', pattern: '/v1/images/generations', dialect: 'openai', bodyLimit: 'model', handler: onFirstCall(() => (require('./handlers/images') as typeof import('./handlers/images')).imageGenerations) },
    { method: 'POST', pattern: '/v1/images/edits', dialect: 'openai', bodyLimit: 'multipart', handler: onFirstCall(() => (require('./handlers/images') as typeof import('./handlers/images')).imageEdits) },
    { method: 'POST', pattern: `${video}/submit`, dialect: 'video', bodyLimit: 'api', handler: videoSubmit },
    { method: 'GET', pattern: `${video}/status/:`, dialect: 'video', bodyLimit: 'none', handler: videoStatus },
    { method: 'GET', pattern: '/console/', dialect: 'openai', bodyLimit: 'none', handler: consoleFiles.index },
    { method: 'GET', pattern: '/console/:', dialect: 'openai', bodyLimit: 'none', handler: consoleFiles.asset },
    ...operatorRoutes(),
  ];
  return routes;
}

interface Node { children: Map<string, Node>; param?: Node; routes: Map<string, Route> }
const newNode = (): Node => ({ children: new Map(), routes: new Map() });
const NO_PARAMS: string[] = [];

/** Splits a path into segments; a trailing slash is kept as an empty last segment so '/api/token/' ≠ '/api/token/5'. */
function segments(path: string): string[] {
  const parts = path.split('/');
  parts.shift();
  return parts;
}

export class Router {
  private readonly root = newNode();
  /** routes without parameters, by exact path: one Map lookup for the hot paths */
  private readonly exact = new Map<string, Map<string, Route>>();

  constructor(routes: Route[]) {
    for (const route of routes) {
      if (!route.pattern.includes(':')) {
        let byMethod = this.exact.get(route.pattern);
        if (!byMethod) { byMethod = new Map(); this.exact.set(route.pattern, byMethod); }
        byMethod.set(route.method, route);
      }
      let node = this.root;
      for (const part of segments(route.pattern)) {
        if (part === ':') node = node.param ??= newNode();
        else {
          let child = node.children.get(part);
          if (!child) { child = newNode(); node.children.set(part, child); }
          node = child;
        }
      }
      node.routes.set(route.method, route);
    }
  }

  /** route + params, or the methods allowed at that path (405), or nothing (404) */
  match(method: string, path: string): { route: Route; params: string[] } | { allowed: string[] } | undefined {
    const exact = this.exact.get(path)?.get(method);
    if (exact) return { route: exact, params: NO_PARAMS };
    let parts = segments(path);
    let found = this.walk(this.root, parts, 0, []);
    if (!found && !path.endsWith('/')) { parts = [...parts, '']; found = this.walk(this.root, parts, 0, []); }
    if (!found) return undefined;
    const route = found.node.routes.get(method) ?? (method === 'HEAD' ? found.node.routes.get('GET') : undefined);
    return route ? { route, params: found.params } : { allowed: [...found.node.routes.keys()] };
  }

  private walk(node: Node, parts: string[], index: number, params: string[]): { node: Node; params: string[] } | undefined {
    if (index === parts.length) return node.routes.size > 0 ? { node, params } : undefined;
    const child = node.children.get(parts[index]);
    if (child) {
      const found = this.walk(child, parts, index + 1, params);
      if (found) return found;
    }
    if (node.param && parts[index] !== '') return this.walk(node.param, parts, index + 1, [...params, parts[index]]);
    return undefined;
  }
}

export function dialectForPath(path: string, videoPrefix: string): ErrorDialect {
  if (path.startsWith('/api/')) return 'envelope';
  if (path.startsWith('/v1/messages')) return 'anthropic';
  if (path.startsWith(videoPrefix)) return 'video';
  return 'openai';
}

/** Writes an error in the route's dialect; never touches a finished exchange. */
export function sendError(exchange: Exchange, error: unknown, dialect: ErrorDialect, log?: (error: unknown) => void): void {
  if (exchange.finished) return;
  const shape = toGatewayError(error);
  if (shape.status >= 500 && !(error instanceof GatewayError) && log) log(error);
  const rendered = renderError(shape, dialect);
  exchange.respond(rendered.status, rendered.headers, rendered.body);
}

export function createDispatcher(context: GatewayContext): (exchange: Exchange) => void {
  const router = new Router(routeTable(context));
  const videoPrefix = `/${context.config.video.vendor}/`;
  const logError = (error: unknown) => context.log.error({ err: error }, 'request failed');
  /**
   * Counts the answered request (metrics) and writes its access line unless billing wrote one (a
   * request that reached billing has its model set).
   */
  const ended = (exchange: Exchange, route: string, dialect: ErrorDialect, startedAt: number) => {
    const status = exchange.status === 0 && exchange.aborted ? 499 : exchange.status;
    context.ops.metrics.request(route, dialect, exchange.model, status);
    if (context.config.accessLog && exchange.model === '') {
      context.accessLog.info({ route: exchange.path.slice(0, 200), method: exchange.method, status, duration_ms: Date.now() - startedAt }, 'request');
    }
  };
  /** A handler's promise rejected: its error answered, then counted as `ended` counts every request. */
  const failed = (exchange: Exchange, route: Route, startedAt: number, error: unknown) => {
    sendError(exchange, error, route.dialect, logError);
    ended(exchange, route.pattern, route.dialect, startedAt);
  };
  return (exchange) => {
    const startedAt = Date.now();
    const matched = router.match(exchange.method, exchange.path);
    if (!matched || 'allowed' in matched) {
      const dialect = dialectForPath(exchange.path, videoPrefix);
      // the deprecated video API says so on every answer, its 404/405 included
      const extra = dialect === 'video' ? deprecationHeaders(context.config) : {};
      const error = !matched
        ? new GatewayError({ status: 404, type: 'invalid_request_error', code: 'not_found', message: `no route for ${exchange.method} ${exchange.path.slice(0, 200)}`, headers: extra })
        : new GatewayError({ status: 405, type: 'invalid_request_error', code: 'method_not_allowed',
          message: `method ${exchange.method} is not allowed here (allowed: ${matched.allowed.join(', ')})`, headers: { allow: matched.allowed.join(', '), ...extra } });
      sendError(exchange, error, dialect);
      ended(exchange, 'unmatched', dialect, startedAt);
      return;
    }
    const { route, params } = matched;
    // read per request: a reload may change the body limits
    const limits = context.config.limits;
    exchange.bodyLimit = route.bodyLimit === 'model' ? limits.modelBodyBytes
      : route.bodyLimit === 'multipart' ? limits.multipartBytes : limits.apiBodyBytes;
    try {
      const result = route.handler(exchange, params, context);
      if (result) {
        // bound functions rather than arrows made per request (see BilledRelay in relay/billed-call.ts)
        result.then(ended.bind(null, exchange, route.pattern, route.dialect, startedAt), failed.bind(null, exchange, route, startedAt));
        return;
      }
    } catch (error) {
      sendError(exchange, error, route.dialect, logError);
    }
    ended(exchange, route.pattern, route.dialect, startedAt);
  };
}

