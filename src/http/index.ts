// Front selection: uWS from its native binary; where it cannot load, node:http with one warning
// that says why. The node:http front is required only when it serves: a uWS worker never loads it.
import type { HttpServer, ServerOptions } from './types';
import { loadUws, UwsServer, type UwsModule } from './uws-server';

export type { Exchange, ExchangeHandler, Headers, HttpServer, ServerLimits, ServerOptions } from './types';

type Loaded = { module: UwsModule } | { failure: string };
let loaded: Loaded | undefined;

function tryLoad(load: (maxHeaderBytes: number) => UwsModule, maxHeaderBytes: number): Loaded {
  try {
    return { module: load(maxHeaderBytes) };
  } catch (error) {
    return { failure: (error as Error).message.split('\n')[0] };
  }
}

/**
 * `load` is the native loader (tests inject a failing one to prove the fallback); the real one is
 * tried once per process and its outcome remembered.
 */
export function createHttpServer(options: ServerOptions, front: 'uws' | 'node', warn: (message: string) => void,
  load?: (maxHeaderBytes: number) => UwsModule): HttpServer {
  if (front === 'uws') {
    const outcome = load ? tryLoad(load, options.limits.maxHeaderBytes) : (loaded ??= tryLoad(loadUws, options.limits.maxHeaderBytes));
    if ('module' in outcome) return new UwsServer(options, outcome.module);
    warn(`uWebSockets.js native binary could not load (${outcome.failure}); serving with the node:http front instead`);
  }
  const { NodeServer } = require('./node-server') as typeof import('./node-server');
  return new NodeServer(options);
}
