// A loopback TCP proxy in front of a PostgreSQL server, for the faults a network brings: the
// answer of a statement lost after the database committed it (the connection drops on its way
// back), or a statement lost on its way there. Every connection is passed through as is until
// `loseAnswerTo` or `loseStatement` is armed.
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface PgProxy {
  url: string;
  /**
   * The next statement whose text contains `marker` runs on the server, but its answer is never
   * delivered: the proxy waits for the server's ReadyForQuery (the statement committed), then
   * drops the connection. Resolves when that happened.
   */
  loseAnswerTo(marker: string): Promise<void>;
  /** The next statement whose text contains `marker` never reaches the server: the connection drops instead. */
  loseStatement(marker: string): Promise<void>;
  close(): Promise<void>;
}

/** ReadyForQuery: 'Z', length 5, then the transaction status byte. */
const READY_FOR_QUERY = Buffer.from([0x5a, 0, 0, 0, 5]);

export async function startPgProxy(targetUrl: string): Promise<PgProxy> {
  const target = new URL(targetUrl);
  const sockets = new Set<Socket>();
  let armed: { marker: string; done: () => void } | null = null;
  let cut: { marker: string; done: () => void } | null = null;

  const server: Server = createServer((client) => {
    const upstream = connect({ host: target.hostname, port: Number(target.port) });
    sockets.add(client).add(upstream);
    let doomed: (() => void) | null = null;
    let answer = Buffer.alloc(0);
    const drop = () => { client.destroy(); upstream.destroy(); };
    client.on('data', (chunk: Buffer) => {
      if (cut && chunk.includes(cut.marker)) { const done = cut.done; cut = null; drop(); done(); return; }
      if (armed && chunk.includes(armed.marker)) { doomed = armed.done; armed = null; }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (doomed === null) { client.write(chunk); return; }
      answer = Buffer.concat([answer, chunk]);
      if (answer.includes(READY_FOR_QUERY)) { const done = doomed; doomed = null; drop(); done(); }
    });
    for (const socket of [client, upstream]) {
      socket.on('error', drop);
      socket.on('close', () => { sockets.delete(socket); drop(); });
    }
  });
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const url = new URL(targetUrl);
  url.port = String(port);
  return {
    url: url.toString(),
    loseAnswerTo: (marker) => new Promise<void>((resolve) => { armed = { marker, done: resolve }; }),
    loseStatement: (marker) => new Promise<void>((resolve) => { cut = { marker, done: resolve }; }),
    close: () => new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    }),
  };
}
