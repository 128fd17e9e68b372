// The supervisor of `tollgate serve` drops V8's optimising compiler before it loads anything else;
// workers, CLI commands and processes that merely load the CLI keep it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { startsSupervisor, SUPERVISOR_V8_FLAGS } from '../../src/process-flags';

const CLI = join(__dirname, '..', '..', 'src', 'cli.js');
const BIN = join(__dirname, '..', '..', '..', 'bin', 'tollgate');
const NODE = { name: 'node' as const, version: process.versions.node };

test('only a starting supervisor run as the program takes the flags', () => {
  assert.equal(startsSupervisor(['node', CLI, 'serve'], CLI, {}, NODE), true);
  assert.equal(startsSupervisor(['node', CLI], CLI, {}, NODE), true, 'no command is serve');
  assert.equal(startsSupervisor(['node', BIN, 'serve', '--config', 'x.json'], BIN, {}, NODE), true);
  assert.equal(startsSupervisor(['node', CLI, 'worker'], CLI, { TOLLGATE_ROLE: 'worker' }, NODE), false);
  assert.equal(startsSupervisor(['node', CLI, 'account', 'list'], CLI, {}, NODE), false);
  assert.equal(startsSupervisor(['node', '/elsewhere/test.js', 'serve'], '/elsewhere/test.js', {}, NODE), false, 'a process that only loads the CLI');
  assert.equal(startsSupervisor(['bun', CLI, 'serve'], CLI, {}, { name: 'bun', version: '1.2.0' }), false, 'no V8 on Bun');
});

test('the flags are ones this Node\'s V8 knows (an unknown one would be ignored without a word)', { skip: process.versions.bun ? 'Bun' : false }, () => {
  const known = execFileSync(process.execPath, ['--v8-options'], { encoding: 'utf8' });
  for (const flag of SUPERVISOR_V8_FLAGS) assert.match(known, new RegExp(`^\\s+--${flag.replace(/^--no-/, '')} `, 'm'), flag);
});
