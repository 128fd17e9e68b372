// Front selection: uWS from its native binary; where it cannot load, node:http with one warning
// that says why.
import { NodeServer } from './node-server';
import type { HttpServer, ServerOptions } from './types';
import { loadUws, UwsServer, type UwsModule } from './uws-server';

export type { Exchange, ExchangeHandler, Headers, HttpServer, ServerLimits, ServerOptions } from './types';

let uwsModule: UwsModule | null | undefined;
let uwsFailure = '';

export function createHttpServer(options: ServerOptions, front: 'uws' | 'node', warn: (message: string) => void): HttpServer {
  if (front === 'uws') {
    if (uwsModule === undefined) {
      try {
        uwsModule = loadUws(options.limits.maxHeaderBytes);
      } catch (error) {
        uwsModule = null;
        uwsFailure = (error as Error).message.split('\n')[0];
      }
    }
    if (uwsModule) return new UwsServer(options, uwsModule);
    warn(`uWebSockets.js native binary could not load (${uwsFailure}); serving with the node:http front instead`);
  }
  return new NodeServer(options);
}
