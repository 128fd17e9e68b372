// Hostile requests to the account read API the console uses (GET /api/account/, /api/account/models,
// /api/log/summary), on both fronts: junk tokens, fuzzed and oversized query strings, bodies and
// methods it does not take, and clients that leave. Always the envelope and a 4xx or a clear
// success:false, never a 500, a hang or another account's data.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { addAccount, call, FRONTS, parseRawAnswer, rawExchange, startTestGateway, type TestGateway } from '../helpers/gateway';

const PATHS = ['/api/account/', '/api/account/models', '/api/log/summary'];

for (const front of FRONTS) {
  describe(`account read API under hostile input (${front} front)`, () => {
    let gateway: TestGateway;
    let mine: { id: number; token: string };
    let other: { id: number; token: string };
    before(async () => {
      gateway = await startTestGateway({ front });
      mine = await addAccount(gateway, 'hostile-mine');
      other = await addAccount(gateway, 'hostile-other');
      await gateway.gateway.context.store.accounts.topUp(other.id, 1_234_567);
    });
    after(async () => { await gateway?.close(); });

    const envelope = (answer: { status: number; json: any; text: string }, label: string) => {
      assert.ok(answer.status < 500, `${label}: ${answer.status} ${answer.text.slice(0, 200)}`);
      assert.equal(typeof answer.json?.success, 'boolean', `${label}: ${answer.text.slice(0, 200)}`);
      assert.equal(typeof answer.json.message, 'string', label);
    };

    test('junk tokens: too long, control characters, another scheme, a key in place of a token', async () => {
      const tokens = ['x'.repeat(600), 'Bearer ', 'Basic dXNlcjpwYXNz', `${mine.token}\u0001`, 'sk-'.padEnd(51, 'a'), `${mine.token} ${mine.token}`, '%00'];
      for (const path of PATHS) {
        for (const token of tokens) {
          const answer = await call(gateway.url, 'GET', path, { token }).catch(() => undefined);
          if (!answer) continue;   // a header the client library itself refuses to send
          envelope(answer, `${path} ${token.slice(0, 20)}`);
          assert.equal(answer.json.success, false, `${path} ${token.slice(0, 20)}`);
          assert.doesNotMatch(answer.text, /1234567|hostile-other/, 'nothing of another account');
        }
      }
    });

    test('fuzzed and oversized query strings are refused by name or ignored, never a 500', async () => {
      const queries = [
        `utc_offset=${'9'.repeat(400)}`, 'utc_offset=NaN', 'utc_offset=-0', 'utc_offset=%2B60', 'utc_offset=60&utc_offset=9999',
        'start_timestamp=99999999999999999999', 'end_timestamp=-5', `key_id=${other.id}`, 'key_id=1e3', `model=${'%ff'.repeat(60)}`,
        `model=${encodeURIComponent('\u0000')}`, 'p=-1', 'page_size=0', `${'a=1&'.repeat(500)}b=2`, '%%%%', '=&=&=',
      ];
      for (const query of queries) {
        const answer = await call(gateway.url, 'GET', `/api/log/summary?${query}`, { token: mine.token });
        envelope(answer, query.slice(0, 40));
        if (answer.json.success) assert.equal(answer.json.data.total.count, 0, 'no record of another account');
      }
      const huge = await rawExchange(gateway.port, [`GET /api/log/summary?model=${'m'.repeat(20_000)} HTTP/1.1\r\nHost: a\r\nAuthorization: ${mine.token}\r\nConnection: close\r\n\r\n`]);
      const status = parseRawAnswer(huge.text).status;
      assert.ok(status === 414 || status === 431, `an over-long URL: ${status}`);
      for (const path of ['/api/account/?p=%zz', `/api/account/models?x=${'y'.repeat(4000)}`]) {
        const answer = await call(gateway.url, 'GET', path, { token: mine.token });
        envelope(answer, path.slice(0, 40));
        assert.equal(answer.json.success, true, 'parameters the endpoint does not read are ignored');
      }
    });

    test('methods and bodies they do not take: 405 with Allow, the body never read', async () => {
      for (const path of PATHS) {
        for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
          const answer = await call(gateway.url, method, path, { token: mine.token, rawBody: '{"balance": 1e30}' });
          assert.equal(answer.status, 405, `${method} ${path}`);
          assert.equal(answer.headers.allow, 'GET');
          envelope(answer, `${method} ${path}`);
        }
        const withBody = await call(gateway.url, 'GET', path, { token: mine.token, rawBody: 'x'.repeat(100_000) });
        envelope(withBody, `GET ${path} with a body`);
      }
      const account = (await call(gateway.url, 'GET', '/api/account/', { token: mine.token })).json.data;
      assert.equal(account.balance, 0, 'nothing a client sent changed the balance');
    });

    test('clients that leave before the answer do not disturb the next request', async () => {
      for (let round = 0; round < 15; round += 1) {
        const path = PATHS[round % PATHS.length];
        await rawExchange(gateway.port, [`GET ${path} HTTP/1.1\r\nHost: a\r\nAuthorization: ${mine.token}\r\n\r\n`], 1);
        await rawExchange(gateway.port, [`GET ${path} HTTP/1.1\r\nHost: a\r\nAuthor`], 1);
      }
      const answer = await call(gateway.url, 'GET', '/api/log/summary', { token: mine.token });
      assert.equal(answer.json.success, true);
    });
  });
}
