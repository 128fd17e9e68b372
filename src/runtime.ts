// The JavaScript runtime this process runs on. Tollgate runs on Node and on Bun; the defaults that
// differ between the two (the HTTP front, the workers' V8 flags) and the start log ask here.

export interface Runtime {
  name: 'node' | 'bun';
  version: string;
}

/** Bun sets process.versions.bun (and keeps process.versions.node at the Node version it mimics). */
export function runtimeOf(versions: NodeJS.ProcessVersions): Runtime {
  const bun = (versions as NodeJS.ProcessVersions & { bun?: string }).bun;
  return bun ? { name: 'bun', version: bun } : { name: 'node', version: versions.node };
}

export const RUNTIME: Runtime = runtimeOf(process.versions);

/**
 * The front a worker serves with. uWebSockets.js is a Node addon built against Node's ABI and never
 * loads on Bun, so Bun always serves with node:http (no attempt, no load-failure warning); on Node
 * the configured front stands, and a uWS binary that cannot load falls back inside src/http.
 */
export function frontFor(configured: 'uws' | 'node', runtime: Runtime = RUNTIME): 'uws' | 'node' {
  return runtime.name === 'bun' ? 'node' : configured;
}
