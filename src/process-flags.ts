// The CLI's first import: V8 flags the supervisor of `tollgate serve` sets for itself before it loads
// anything else (its command line is the operator's, not ours to extend; workers get theirs from
// the supervisor when it forks them, see workerV8Flags).
//
// The supervisor runs without V8's optimising compiler. It serves no call, so none of its code gets
// hot after the start; during the start, though, the module loader's own functions run hot enough
// (87 files and ~190 builtins) for TurboFan to compile them, and that pulls the compiler's machine
// code, several MiB of the node binary, into the supervisor's resident memory for its whole life.
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { RUNTIME, type Runtime } from './runtime';

export const SUPERVISOR_V8_FLAGS: readonly string[] = ['--no-turbofan'];

/**
 * Whether this process is a supervisor starting: the CLI run as the program (directly or through
 * bin/tollgate) with `serve` or no command, and not a forked worker.
 */
export function startsSupervisor(argv: readonly string[], mainFile: string | undefined, env: NodeJS.ProcessEnv, runtime: Runtime = RUNTIME): boolean {
  if (runtime.name !== 'node' || env.TOLLGATE_ROLE === 'worker') return false;
  const entry = mainFile === join(__dirname, 'cli.js') || mainFile === join(__dirname, '..', '..', 'bin', 'tollgate');
  const command = argv[2];
  return entry && (command === 'serve' || command === undefined);
}

if (startsSupervisor(process.argv, require.main?.filename, process.env)) {
  for (const flag of SUPERVISOR_V8_FLAGS) setFlagsFromString(flag);
}
