// The LMDB open gate (src/store/lmdb/open-gate.ts, docs/lmdb.md): while a process opens the data
// dir's envs, a process that has them open (the serving one if there is one) holds their write lock,
// so no commit of another process falls in the open's racy window and is lost; one process at a time
// opens (the open lock). Real processes on a real data dir.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { LmdbStore } from '../../src/store/lmdb';
import { HOLD_AT_MOST_MS, processAlive } from '../../src/store/lmdb/open-gate';

const CHILD = join(__dirname, '..', 'helpers', 'lmdb-gate-child.js');
const dirs: string[] = [];
const children: ChildProcess[] = [];
after(() => {
  for (const child of children) child.kill('SIGKILL');
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(condition: () => boolean, ms: number): Promise<boolean> {
  const by = Date.now() + ms;
  while (!condition() && Date.now() < by) await sleep(5);
  return condition();
}

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-open-gate-'));
  dirs.push(dir);
  return dir;
}

interface Child { process: ChildProcess; said(word: string): Promise<void>; stdout: Promise<string> }

function child(...args: string[]): Child {
  const process_ = spawn(process.execPath, [CHILD, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  children.push(process_);
  let stderr = '';
  let stdout = '';
  const listeners: Array<() => void> = [];
  process_.stderr!.on('data', (chunk) => { stderr += chunk; for (const listener of listeners) listener(); });
  process_.stdout!.on('data', (chunk) => { stdout += chunk; });
  const exited = new Promise<string>((resolve, reject) => process_.on('exit', (code) => {
    if (code === 0) resolve(stdout); else reject(new Error(`${args[0]} exited ${code}: ${stderr}`));
  }));
  exited.catch(() => undefined);
  return {
    process: process_,
    stdout: exited,
    said: (word) => new Promise((resolve, reject) => {
      const check = () => { if (stderr.split('\n').includes(word)) resolve(); };
      listeners.push(check);
      check();
      exited.then(() => reject(new Error(`${args[0]} ended before saying ${word}`)), reject);
    }),
  };
}

/** A fresh data dir with its gate's holder, and a writer that has the store open and creates `keys` keys when told. */
async function holderAndWriter(keys: number, holderRole = 'holder'): Promise<{ dir: string; holder: Child; writer: Child }> {
  const dir = dataDir();
  await LmdbStore.open(dir).close();
  const holder = child(holderRole, dir);
  await holder.said('ready');
  const writer = child('writer', dir, String(keys));
  await writer.said('open');
  return { dir, holder, writer };
}

for (const holderRole of ['holder', 'polling-holder']) {
  const how = holderRole === 'holder' ? 'watching the gate dir' : 'polling the gate dir';
  test(`(holder ${how}) while the holder holds for an opener, a commit of another process waits; the opener's own open lets it go at once`, async () => {
    const { dir, holder, writer } = await holderAndWriter(25, holderRole);

    // an opener's request, made by hand: the holder takes the main env's write lock and says so
    const id = `${process.pid}-${Date.now()}-1`;
    const gate = join(dir, 'open-gate');
    writeFileSync(join(gate, `${id}.request`), 'tollgate.lmdb');
    const heldBy = Date.now() + 10_000;
    while (!existsSync(join(gate, `${id}.held`)) && Date.now() < heldBy) await new Promise((resolve) => setTimeout(resolve, 5));
    assert.ok(existsSync(join(gate, `${id}.held`)), 'the holder answered the request');
    let written = false;
    void writer.stdout.then(() => { written = true; }, () => undefined);
    writer.process.stdin!.end('go\n');
    await new Promise((resolve) => setTimeout(resolve, 600));
    assert.equal(written, false, 'the writer\'s commits wait while the lock is held');
    writeFileSync(join(gate, `${id}.opened`), '');
    const ids = JSON.parse(await writer.stdout) as number[];
    assert.equal(ids.length, 25);

    // a real opener: answered, opened, and the holder let go well before its bound (it saw the open wait)
    const startedAt = Date.now();
    const store = LmdbStore.open(dir);
    const openedIn = Date.now() - startedAt;
    await store.close();
    assert.ok(openedIn < HOLD_AT_MOST_MS, `opened in ${openedIn} ms`);
    // the holder's own marks stay while it runs (its pid, its membership)
    const leftovers = () => readdirSync(gate).filter((name) => name !== 'holder' && !name.startsWith(`member-${holder.process.pid}-`));
    const cleanBy = Date.now() + 5_000;
    while (leftovers().length > 0 && Date.now() < cleanBy) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual(leftovers(), [], 'the gate is left clean');
    holder.process.stdin!.end();
    await holder.stdout;
    assert.deepEqual(readdirSync(gate), [], 'the holder took its pid file away');
  });
}

test('processes opening and closing the store while another creates keys: no commit is lost (every id handed out once)', async () => {
  const { dir, holder, writer } = await holderAndWriter(3000);
  writer.process.stdin!.end('go\n');
  let finished = false;
  const ids = writer.stdout.finally(() => { finished = true; });
  let opens = 0;
  const deadline = Date.now() + 60_000;
  while (!finished && Date.now() < deadline) {
    await Promise.all(Array.from({ length: 4 }, () => child('opener', dir).stdout));
    opens += 4;
  }
  const created = JSON.parse(await ids) as number[];
  assert.ok(opens >= 2, `${opens} opens during the creations`);
  assert.equal(created.length, 3000);
  assert.equal(new Set(created).size, created.length, `${created.length - new Set(created).size} ids handed out twice`);
  holder.process.stdin!.end();
  await holder.stdout;
});

test('with no holder, a process whose store is open holds for an opener that asks it: a commit of another process waits', async () => {
  const dir = dataDir();
  await LmdbStore.open(dir).close();
  const member = child('member', dir);
  await member.said('ready');
  const writer = child('writer', dir, '25');
  await writer.said('open');
  const gate = join(dir, 'open-gate');
  assert.ok(readdirSync(gate).some((name) => name.startsWith(`member-${member.process.pid}-`)), 'the member is known to the gate');
  assert.ok(!existsSync(join(gate, 'holder')));

  // a request addressed to the member, made by hand: it takes the main env's write lock and says so
  const id = `${process.pid}-${Date.now()}-1`;
  writeFileSync(join(gate, `${id}.request`), `tollgate.lmdb\n${member.process.pid}`);
  assert.ok(await until(() => existsSync(join(gate, `${id}.held`)), 10_000), 'the member answered the request');
  let written = false;
  void writer.stdout.then(() => { written = true; }, () => undefined);
  writer.process.stdin!.end('go\n');
  await sleep(600);
  assert.equal(written, false, 'the writer\'s commits wait while the lock is held');
  writeFileSync(join(gate, `${id}.opened`), '');
  assert.equal((JSON.parse(await writer.stdout) as number[]).length, 25);
  assert.ok(!readdirSync(gate).some((name) => name.startsWith(`member-${writer.process.pid}-`)), 'a closed store leaves the gate');
  member.process.stdin!.end();
  await member.stdout;
  assert.deepEqual(readdirSync(gate), [], 'the gate is left clean');
});

test('an opener waits while another live process holds the open lock, and takes over a lock whose owner is gone', async () => {
  const dir = dataDir();
  await LmdbStore.open(dir).close();
  const lock = join(dir, 'open-gate', 'open.lock');
  const owner = spawn(process.execPath, ['-e', 'setTimeout(() => undefined, 60_000)'], { stdio: 'ignore' });
  children.push(owner);
  writeFileSync(lock, `${owner.pid}-1`);
  let opened = false;
  const opener = child('opener', dir);
  void opener.stdout.then(() => { opened = true; }, () => undefined);
  await sleep(800);
  assert.equal(opened, false, 'the opener waits for the lock');
  rmSync(lock);
  await opener.stdout;

  owner.kill('SIGKILL');
  assert.ok(await until(() => !processAlive(owner.pid!), 5_000));
  writeFileSync(lock, `${owner.pid}-1`);
  const startedAt = Date.now();
  await child('opener', dir).stdout;
  assert.ok(Date.now() - startedAt < HOLD_AT_MOST_MS, 'a gone owner\'s lock is taken over at once');
  assert.ok(!existsSync(lock), 'and let go after the open');
});
