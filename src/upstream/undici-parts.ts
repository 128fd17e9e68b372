// The two parts of undici the upstream path uses, each loaded by its own file. undici's index
// (./undici) loads every part of the package (fetch, WebSocket, caches, mocks, proxies) into each
// worker, which uses none of them: upstream calls go through dispatch() on a Pool (pools.ts,
// upstream-call.ts) and read undici's error classes. A file path is the npm package on Bun too,
// where a bare 'undici' is Bun's own module.
import type { errors as UndiciErrors, Pool as UndiciPool } from './undici';

export const Pool = require('undici/lib/dispatcher/pool') as typeof UndiciPool;
export type Pool = UndiciPool;
export const errors = require('undici/lib/core/errors') as typeof UndiciErrors;
