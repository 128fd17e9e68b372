// The npm undici package, imported by its file path: on Bun a bare 'undici' resolves to Bun's
// built-in module, which has no Dispatcher.dispatch or Pool.close; 'undici/index.js' is the npm
// package on Node and Bun alike. Everything in the repo that uses undici imports it from here, but
// the upstream path's Pool and errors, which take their own files to leave the rest unloaded
// (undici-parts.ts).
export { Agent, Client, Pool, errors, request } from 'undici/index.js';
export type { Dispatcher } from 'undici/index.js';
