// The multi-process runtime (issue 2, "Runtime", "Store", "Accounts CLI"): the real `tollgate serve`
// with worker processes, the CLI against the same data dir, concurrent writers, restarts, a killed
// worker, a draining SIGTERM.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { getPriority } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { EMBEDDED_CONFIG } from '../../src/config';
import { LEDGER_WRITER_NICE } from '../../src/store';
import {
  call, cliJson, FRONTS, parseRawAnswer, REPO_ROOT, startSupervisor, tempDir, waitFor, type SupervisedGateway,
} from '../helpers/gateway';

const run = promisify(execFile);
const STORE_WRITER = join(REPO_ROOT, 'dist', 'test', 'helpers', 'store-writer.js');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Waits for `promise` at most `ms` (the timer does not keep the test process alive). */
const atMost = (promise: Promise<unknown>, ms: number) => Promise.race([promise, new Promise((resolve) => setTimeout(resolve, ms).unref())]);

async function healthPid(url: string): Promise<number | undefined> {
  try {
    const answer = await call(url, 'GET', '/healthz');
    return answer.status === 200 ? answer.json.pid as number : undefined;
  } catch {
    return undefined;
  }
}

/** Polls /healthz (a new connection each time, so SO_REUSEPORT spreads them) until `count` worker pids answered. */
async function workerPids(url: string, count: number): Promise<Set<number>> {
  const pids = new Set<number>();
  await waitFor(async () => {
    const pid = await healthPid(url);
    if (pid !== undefined) pids.add(pid);
    return pids.size >= count;
  }, 10_000, 5);
  return pids;
}

/** What the gateway logged that is not routine: warnings, errors, and lines that are not JSON (a crash). */
function logProblems(gateway: SupervisedGateway): string {
  const lines = gateway.output().split('\n').filter((line) => line.trim() !== '' && !/^\{"level":(10|20|30),/.test(line));
  return lines.length === 0 ? '(nothing but info lines)' : lines.join('\n').slice(-4000);
}

/**
 * The shared gateway still answers. The suite's tests run on one gateway: when an earlier test broke
 * it, a later one fails here saying so, with what the gateway logged, rather than with a refused
 * connection or a count that an earlier failure left short.
 */
async function stillAnswers(gateway: SupervisedGateway): Promise<void> {
  const pid = await healthPid(gateway.url);
  assert.ok(pid !== undefined, `the shared gateway no longer answers /healthz (broken by an earlier test); its log:\n${logProblems(gateway)}`);
}

/** Runs `tasks` with at most `parallel` at once. */
async function pooled<T>(tasks: (() => Promise<T>)[], parallel: number): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  let next = 0;
  await Promise.all(Array.from({ length: parallel }, async () => {
    while (next < tasks.length) {
      const index = next++;
      results[index] = await tasks[index]();
    }
  }));
  return results;
}

describe('runtime: supervisor, workers, store and CLI', () => {
  const dataDir = tempDir();
  let gateway: SupervisedGateway | undefined;
  let firstAdminToken = '';
  let firstAdminTokenMtime = 0;
  after(async () => {
    await gateway?.stop('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('first start bootstraps admin once: <dataDir>/admin-token (0600) and secret.key (0600)', async () => {
    gateway = await startSupervisor({ workers: 2, dataDir });
    const file = join(dataDir, 'admin-token');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(statSync(join(dataDir, 'secret.key')).mode & 0o777, 0o600);
    firstAdminToken = gateway.adminToken();
    firstAdminTokenMtime = statSync(file).mtimeMs;
    assert.match(firstAdminToken, /^\S{20,}$/);
    const listed = await call(gateway.url, 'GET', '/api/token/', { token: firstAdminToken });
    assert.equal(listed.json.success, true);
    // issue 21 item 13: the log says where the token is, never the token
    assert.equal(gateway.output().split(firstAdminToken).length - 1, 0, 'the token is never logged');
    assert.ok(gateway.output().includes(file), 'the log names the token file');
    const accounts = await cliJson(['account', 'list'], dataDir) as { name: string }[];
    assert.deepEqual(accounts.map((account) => account.name), ['admin']);
  });

  test('two worker processes and a direct store writer create keys concurrently: every id distinct, nothing lost', async () => {
    assert.ok(gateway);
    const pids = await workerPids(gateway.url, 2);
    assert.equal(pids.size, 2, 'both workers answer on the shared port');
    const token = firstAdminToken;
    // the writer opens the store while the workers commit: through the open gate (docs/lmdb.md)
    const writer = run(process.execPath, [STORE_WRITER, dataDir, '1', '100']);
    const answers = await pooled(Array.from({ length: 200 }, (_, index) => () =>
      call(gateway!.url, 'POST', '/api/token/', { token, body: { name: `http-${index}` } })), 25)
      .catch((error: Error) => { throw new Error(`${error.message}; the gateway's log:\n${logProblems(gateway!)}`); });
    const directIds = JSON.parse((await writer.catch((error: Error) => {
      throw new Error(`${error.message}; the gateway's log:\n${logProblems(gateway!)}`);
    })).stdout) as number[];
    const httpIds = answers.map((answer) => {
      assert.equal(answer.json?.success, true, answer.text);
      return answer.json.data.id as number;
    });
    assert.equal(new Set(httpIds).size, 200);
    assert.equal(directIds.length, 100);
    assert.equal(new Set([...httpIds, ...directIds]).size, 300, 'no id was handed out twice');
    const listed = await call(gateway.url, 'GET', '/api/token/?p=0&page_size=100', { token });
    assert.equal(listed.json.data.total, 300);
    const http = await call(gateway.url, 'GET', '/api/token/search?keyword=http-&page_size=100', { token });
    assert.equal(http.json.data.total, 200);
  });

  test('the CLI manages accounts with --json next to the running server', async () => {
    assert.ok(gateway);
    await stillAnswers(gateway);
    const created = await cliJson(['account', 'create', '--name', 'acme', '--balance-usd', '2.5'], dataDir) as Record<string, unknown>;
    assert.deepEqual(Object.keys(created).sort(), ['access_token', 'id', 'name']);
    assert.equal(created.name, 'acme');
    assert.ok(Number.isInteger(created.id));
    const acmeToken = created.access_token as string;
    const key = await call(gateway.url, 'POST', '/api/token/', { token: acmeToken, body: { name: 'acme-key' } });
    assert.equal(key.json.success, true, key.text);

    const second = await cliJson(['account', 'token', '--account', 'acme'], dataDir) as Record<string, unknown>;
    assert.equal(second.scope, 'write');
    assert.equal((await call(gateway.url, 'GET', '/api/token/', { token: second.access_token as string })).json.data.total, 1);

    const topped = await cliJson(['account', 'topup', '--account', String(created.id), '--usd', '1.5'], dataDir) as Record<string, unknown>;
    assert.equal(topped.name, 'acme');
    assert.equal(topped.balance, 4 * 500000);

    const accounts = await cliJson(['account', 'list'], dataDir) as Record<string, unknown>[];
    assert.deepEqual(accounts.map((account) => account.name), ['admin', 'acme']);
    assert.equal(accounts[1].balance, 2_000_000);

    await assert.rejects(cliJson(['account', 'create', '--name', 'acme'], dataDir), /already exists/);
    await assert.rejects(cliJson(['account', 'token', '--account', 'nobody'], dataDir), /no account "nobody"/);
  });

  test('the CLI refuses bad amounts with a usage message (exit 64, no stack trace); a balance stays an exact integer', async () => {
    const refusedWith = async (args: string[], message: RegExp) => {
      await assert.rejects(cliJson(args, dataDir), (error: Error) => {
        assert.match(error.message, /exited 64/);
        assert.match(error.message, message);
        assert.doesNotMatch(error.message, /node:internal|\n\s+at /);
        return true;
      });
    };
    await refusedWith(['account', 'topup', '--account', 'acme', '--usd', '-5'], /--usd.*--flag=VALUE/s);
    await refusedWith(['account', 'topup', '--account', 'acme', '--usd=-5'], /--usd must be a number of US dollars from 0 to 10000000000/);
    await refusedWith(['account', 'topup', '--account', 'acme', '--usd', '1e12'], /--usd must be a number of US dollars from 0 to 10000000000/);
    await refusedWith(['account', 'create', '--name', 'huge', '--balance-usd', '1e300'], /--balance-usd must be a number/);
    await refusedWith(['account', 'list', '--bogus'], /Unknown option '--bogus'/);
    const big = await cliJson(['account', 'create', '--name', 'big', '--balance-usd', '9999999999'], dataDir) as { id: number };
    await refusedWith(['account', 'topup', '--account', 'big', '--usd', '2'], /would pass the most an account may hold/);
    const topped = await cliJson(['account', 'topup', '--account', String(big.id), '--usd', '0.00001'], dataDir) as Record<string, number>;
    assert.equal(topped.balance, 9999999999 * 500000 + 5);
  });

  test('a read-only token (account token --read-only) reads but gets 403 on create, update, status, delete and reveal', async () => {
    assert.ok(gateway);
    await stillAnswers(gateway);
    const readOnly = await cliJson(['account', 'token', '--account', 'acme', '--read-only'], dataDir) as Record<string, string>;
    assert.equal(readOnly.scope, 'read');
    const listed = await call(gateway.url, 'GET', '/api/token/', { token: readOnly.access_token });
    assert.equal(listed.json.success, true);
    const id = listed.json.data.items[0].id as number;
    for (const [method, path, body] of [['POST', '/api/token/', {}], ['PUT', '/api/token/', { id, name: 'x' }],
      ['PUT', '/api/token/?status_only=true', { id, status: 2 }], ['DELETE', `/api/token/${id}`, undefined],
      ['POST', `/api/token/${id}/key`, undefined]] as const) {
      const answer = await call(gateway.url, method, path, { token: readOnly.access_token, body });
      assert.equal(answer.status, 403, `${method} ${path}`);
      assert.equal(answer.json.success, false);
      assert.match(answer.json.message, /no write permission/);
    }
  });

  test('rotate-tokens revokes every access token of the account: the old ones answer "access token is invalid"', async () => {
    assert.ok(gateway);
    await stillAnswers(gateway);
    const before = await cliJson(['account', 'token', '--account', 'acme'], dataDir) as Record<string, string>;
    const rotated = await cliJson(['account', 'rotate-tokens', '--account', 'acme'], dataDir) as Record<string, unknown>;
    assert.ok((rotated.revoked as number) >= 4, `revoked ${String(rotated.revoked)}`);
    assert.equal(rotated.scope, 'write');
    const old = await call(gateway.url, 'GET', '/api/token/', { token: before.access_token });
    assert.equal(old.status, 200);
    assert.equal(old.json.success, false);
    assert.equal(old.json.message, 'access token is invalid');
    const fresh = await call(gateway.url, 'GET', '/api/token/', { token: rotated.access_token as string });
    assert.equal(fresh.json.data.total, 1);
    const admin = await call(gateway.url, 'GET', '/api/token/', { token: firstAdminToken });
    assert.equal(admin.json.success, true, "another account's tokens are untouched");
  });

  test('the bin/tollgate launcher runs the CLI', async () => {
    const { stdout } = await run(process.execPath, [join(REPO_ROOT, 'bin', 'tollgate'), 'account', 'list', '--json'],
      { env: { ...process.env, TOLLGATE_DATA_DIR: dataDir } });
    assert.deepEqual((JSON.parse(stdout) as { name: string }[]).map((account) => account.name), ['admin', 'acme', 'big']);
  });

  test('a master secret other than the one the keys were sealed with stops the start, naming where it came from (never the secret)', async () => {
    const started = run(process.execPath, [join(REPO_ROOT, 'dist', 'src', 'cli.js'), 'serve'], {
      timeout: 20_000, env: { ...process.env, TOLLGATE_DATA_DIR: dataDir, TOLLGATE_SECRET: 'not-the-original-secret', PORT: '0', HOST: '127.0.0.1' },
    });
    await assert.rejects(started, (error: Error & { code?: number; stderr?: string }) => {
      assert.equal(error.code, 1, error.message);
      assert.match(error.stderr ?? '', /configuration error: the master secret \(TOLLGATE_SECRET\) is not the one the API keys in .* were sealed with/);
      assert.doesNotMatch(error.stderr ?? '', /not-the-original-secret/);
      return true;
    });
  });

  test('SIGTERM stops the supervisor with exit code 0; a restart keeps every record and does not rewrite admin-token', async () => {
    assert.ok(gateway);
    await stillAnswers(gateway);
    const before = (await call(gateway.url, 'GET', '/api/token/?p=0', { token: firstAdminToken })).json.data;
    const someKey = before.items[0];
    const revealed = (await call(gateway.url, 'POST', `/api/token/${someKey.id}/key`, { token: firstAdminToken })).json.data.key;
    assert.equal(await gateway.stop('SIGTERM'), 0);
    gateway = await startSupervisor({ workers: 1, dataDir });
    assert.equal(gateway.adminToken(), firstAdminToken);
    assert.equal(statSync(join(dataDir, 'admin-token')).mtimeMs, firstAdminTokenMtime);
    assert.doesNotMatch(gateway.output(), new RegExp(firstAdminToken), 'the token is not logged again');
    const listed = await call(gateway.url, 'GET', '/api/token/', { token: firstAdminToken });
    assert.equal(listed.json.data.total, before.total, 'every key is still there');
    const again = await call(gateway.url, 'POST', `/api/token/${someKey.id}/key`, { token: firstAdminToken });
    assert.equal(again.json.data.key, revealed, 'the sealed key still opens after a restart');
    const accounts = await cliJson(['account', 'list'], dataDir) as Record<string, unknown>[];
    assert.equal(accounts.find((account) => account.name === 'acme')?.balance, 2_000_000);
    const created = await call(gateway.url, 'POST', '/api/token/', { token: firstAdminToken, body: {} });
    assert.ok(created.json.data.id > Math.max(...listed.json.data.items.map((item: { id: number }) => item.id)), 'ids keep increasing');
  });

  test('kill -9 of a worker: a replacement answers within seconds', async () => {
    assert.ok(gateway);
    await stillAnswers(gateway);
    const victim = await healthPid(gateway.url);
    assert.ok(victim);
    const killedAt = Date.now();
    process.kill(victim, 'SIGKILL');
    // A single death is replaced at once (no crash-loop back-off). A worker boots in well under a
    // second on an idle machine and in several on a loaded one: the bound only says "replaced".
    const replacement = await waitFor(async () => {
      const pid = await healthPid(gateway!.url);
      return pid !== undefined && pid !== victim ? pid : undefined;
    }, 30_000, 10);
    assert.ok(replacement, `no new worker answered within ${Date.now() - killedAt} ms`);
    const listed = await call(gateway.url, 'GET', '/api/token/', { token: firstAdminToken });
    assert.equal(listed.json.success, true);
  });

  test('each worker (the replacement too) commits on a thread 10 nicer than the rest; every other thread, the supervisor\'s included, at the niceness it was started with', {
    skip: process.platform !== 'linux' && 'per-thread priorities are read from /proc',
  }, async () => {
    assert.ok(gateway);
    await stillAnswers(gateway);
    const supervisor = gateway.child.pid!;
    // the supervisor forks the workers: they must not inherit a lower priority (the test may itself run under nice)
    const base = getPriority();
    const writer = Math.min(19, base + LEDGER_WRITER_NICE);
    assert.deepEqual([...new Set(threadsOf(supervisor).map((thread) => thread.nice))], [base], `supervisor ${supervisor}`);
    const workers = await workerPids(gateway.url, 2);
    for (const pid of workers) {
      const threads = threadsOf(pid);
      const shown = threads.map((thread) => `${thread.name}:${thread.nice}`).join(', ');
      assert.equal(statFields(`/proc/${pid}/stat`)[1], String(supervisor), 'a worker of this supervisor');
      assert.equal(Number(statFields(`/proc/${pid}/stat`)[16]), base, `main thread of worker ${pid}`);
      // On Bun each JS thread runs its own JavaScriptCore VM, whose garbage-collector thread starts
      // when that VM first collects: the writer's is started by the writer, at its niceness, as the
      // writer's own work should be. On Node the writer is the only such thread.
      const atWriter = threads.filter((thread) => thread.nice === writer && !(process.versions.bun && /ollector Thread$/.test(thread.name)));
      assert.equal(atWriter.length, 1, `threads of ${pid}: ${shown}`);
      assert.ok(threads.every((thread) => thread.nice === base || thread.nice === writer), `threads of ${pid}: ${shown}`);
    }
  });
});

/** Every thread of a process: its name (/proc/PID/task/TID/comm) and nice value (field 19 of its stat). */
function threadsOf(pid: number): { name: string; nice: number }[] {
  return readdirSync(`/proc/${pid}/task`).map((tid) => ({
    name: readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim(),
    nice: Number(statFields(`/proc/${pid}/task/${tid}/stat`)[16]),
  }));
}

/** The fields of a /proc stat file after the command name: [state, ppid, …]. */
function statFields(path: string): string[] {
  const stat = readFileSync(path, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

describe('runtime: SIGTERM drains in-flight requests', () => {
  for (const front of FRONTS) {
    test(`${front} front: a POST whose body is half sent when SIGTERM arrives still succeeds; then exit 0`, async () => {
      const dataDir = tempDir();
      const gateway = await startSupervisor({ workers: 1, dataDir, env: { TOLLGATE_FRONT: front } });
      try {
        await workerPids(gateway.url, 1);
        const body = JSON.stringify({ name: 'in-flight', padding: 'x'.repeat(2000) });   // unknown fields are ignored
        const socket = connect({ host: '127.0.0.1', port: gateway.port });
        const received: Buffer[] = [];
        socket.on('data', (chunk) => received.push(chunk));
        const closed = new Promise<void>((resolve) => { socket.on('close', () => resolve()); socket.on('error', () => resolve()); });
        await new Promise<void>((resolve) => socket.on('connect', resolve));
        socket.write(`POST /api/token/ HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: ${gateway.adminToken()}\r\n`
          + `content-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body.slice(0, 1000)}`);
        await sleep(300);   // the worker has the request and half its body
        const exited = gateway.stop('SIGTERM');
        await sleep(300);   // the worker is draining now
        const refused = await call(gateway.url, 'GET', '/healthz').then(() => false, () => true);
        socket.write(body.slice(1000));
        await atMost(closed, 5_000);
        const answer = parseRawAnswer(Buffer.concat(received).toString('utf8'));
        assert.equal(answer.status, 200, Buffer.concat(received).toString('utf8'));
        const envelope = JSON.parse(answer.body);
        assert.equal(envelope.success, true);
        assert.equal(envelope.data.name, 'in-flight');
        assert.equal(await exited, 0);
        assert.equal(refused, true, 'a draining worker takes no new connections');
        socket.destroy();
      } finally {
        await gateway.stop('SIGKILL');
        rmSync(dataDir, { recursive: true, force: true });
      }
    });
  }

  test('SIGINT with a request that never completes: the drain deadline ends it and the exit code is still 0', async () => {
    const dataDir = tempDir();
    const configPath = join(dataDir, 'config.json');
    writeFileSync(configPath, JSON.stringify({ ...EMBEDDED_CONFIG, limits: { drain_timeout_ms: 500 } }));
    const gateway = await startSupervisor({ workers: 1, dataDir, configPath });
    try {
      await workerPids(gateway.url, 1);
      const socket = connect({ host: '127.0.0.1', port: gateway.port });
      socket.on('error', () => undefined);
      const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
      await new Promise<void>((resolve) => socket.on('connect', resolve));
      socket.write(`POST /api/token/ HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: ${gateway.adminToken()}\r\ncontent-length: 100\r\n\r\n{"na`);
      await sleep(300);
      const started = Date.now();
      assert.equal(await gateway.stop('SIGINT'), 0);
      const elapsed = Date.now() - started;
      assert.ok(elapsed >= 400, `exited after ${elapsed} ms: it waited for the in-flight request`);
      assert.ok(elapsed < 2_400, `exited after ${elapsed} ms: the 500 ms drain deadline (plus the 2 s hard limit) holds`);
      await atMost(closed, 2_000);
      assert.equal(socket.destroyed || socket.readableEnded, true, 'the stalled connection was closed');
      socket.destroy();
    } finally {
      await gateway.stop('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
