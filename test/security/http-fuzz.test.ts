import net from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signRequest } from '../../src/signing/request-signature';
import { client, startTestApp, type TestApp, type TestOperator } from '../support/harness';

/**
 * Signed but malformed requests on every route, and raw-socket requests Node's parser sees first:
 * each gets a 4xx in the surface's error shape, never a 5xx or a hang, and writes nothing.
 */
const U = '00000000-0000-4000-8000-000000000000';
const PB = '/api/public/v1/place-bet';
const BET = '{"external_user_id":"u","amount":1}';

/** Surface A's error shape, Surface B's (also everything outside the two surfaces). */
const shapeA = { error: expect.any(String), code: expect.stringMatching(/^[A-Z_]+$/) };
const shapeB = { error: expect.stringMatching(/^[A-Z_]+$/), message: expect.any(String) };

describe('HTTP fuzz edges: malformed signed requests and raw sockets', () => {
  let t: TestApp;
  let op: TestOperator;
  let callA: ReturnType<typeof client>;
  let callB: ReturnType<typeof client>;
  let port: number;
  let n = 0;
  const key = () => `fz-${++n}`;
  const call = (path: string) => (path.startsWith('/api/') ? callA : callB);

  async function written(): Promise<Record<string, number>> {
    const count = async (table: string) =>
      Number((await t.app.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`))!.n);
    return {
      bets: await count('bets'),
      idempotency_keys: await count('idempotency_keys'),
      sessions: await count('sessions'),
      webhook_endpoints: await count('webhook_endpoints'),
    };
  }

  beforeAll(async () => {
    // Engines off: no round is open, so nothing here can be refused for a reason other than its input.
    t = await startTestApp({ engines: false });
    // A test key (sandbox routes answer) with a bucket no sweep here can empty.
    op = await t.createOperator({ mode: 'test', settings: { rate_limit: { refill_per_second: 5000, burst: 5000 } } });
    callA = client(t.baseUrl, op, 'A');
    callB = client(t.baseUrl, op, 'B');
    port = Number(new URL(t.baseUrl).port);
  });
  afterAll(async () => t?.close());

  /** Sends bytes on a fresh socket; resolves with all it got when the server closes, or after `waitMs`. */
  function raw(data: string, waitMs = 1500): Promise<{ text: string; closed: boolean }> {
    return new Promise((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      let text = '';
      const timer = setTimeout(() => {
        socket.destroy();
        resolve({ text, closed: false });
      }, waitMs);
      socket.on('data', (d) => {
        text += d.toString('latin1');
      });
      socket.on('error', () => {});
      socket.on('close', () => {
        clearTimeout(timer);
        resolve({ text, closed: true });
      });
      socket.write(data);
    });
  }

  /** Auth header lines for a raw Surface A request, signed over exactly `body`. */
  function signedLines(method: string, path: string, body: string): string {
    const ts = String(Date.now());
    const sig = signRequest(op.apiSecret, method, path, ts, body);
    return `x-api-key: ${op.apiKey}\r\nx-timestamp: ${ts}\r\nx-signature: ${sig}\r\n`;
  }

  const statusOf = (text: string): number => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
  const bodyOf = (text: string): unknown => JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));

  it('every API route and method, with bodies of every JSON type: a 4xx or 2xx in shape, never a 5xx', async () => {
    const before = await written();
    const routes = [
      PB,
      '/api/public/v1/cashout',
      '/api/public/v1/rounds/5',
      `/api/public/v1/bets/${U}`,
      '/api/public/v1/webhook-endpoints',
      `/api/public/v1/webhook-endpoints/${U}/rotate-secret`,
      '/api/public/v1/compliance/flags',
      '/v1/sessions/launch',
      '/v1/bets/reserve',
      `/v1/rounds/${U}`,
      '/v1/settlements',
      `/v1/webhook-endpoints/${U}`,
      `/v1/webhook-deliveries/${U}/resend`,
      '/v1/webhooks/verify-signature',
      '/v1/sandbox/timing',
      '/v1/sandbox/wallet/balances',
      `/fairness/rounds/${U}`,
    ];
    const bodies = ['[]', 'null', '1', '"x"', '{"a":1}', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{}}}'];
    const seen = new Set<number>();
    for (const path of routes) {
      for (const method of ['GET', 'HEAD', 'OPTIONS', 'TRACE']) {
        const r = await call(path)(method, path);
        expect(r.status, `${method} ${path}`).toBeLessThan(500);
        seen.add(r.status);
      }
      for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
        for (const body of bodies) {
          const r = await call(path)(method, path, undefined, { rawBody: body, idempotencyKey: key() });
          expect(r.status, `${method} ${path} ${body}`).toBeGreaterThanOrEqual(r.status < 300 ? 200 : 400);
          expect(r.status, `${method} ${path} ${body}`).toBeLessThan(500);
          if (r.status >= 400) expect(r.body).toEqual(path.startsWith('/api/') ? shapeA : shapeB);
          seen.add(r.status);
        }
      }
    }
    // A method a route does not have is the same 404 NOT_FOUND as an unknown path (no 405 anywhere).
    expect(seen.has(405)).toBe(false);
    const after = await written();
    expect(after.bets).toBe(before.bets);
    expect(after.sessions).toBe(before.sessions);
    expect(after.webhook_endpoints).toBe(before.webhook_endpoints);
  });

  it('each field of each documented request body given a wrong type: never a 5xx, nothing created', async () => {
    const before = await written();
    const doc = (await (await request(`${t.baseUrl}/openapi.json`)).body.json()) as {
      paths: Record<string, Record<string, { requestBody?: { content?: Record<string, { schema?: any }> } }>>;
      components: { schemas: Record<string, any> };
    };
    // A body schema is a $ref to a named schema of the components (or, unnamed, the schema itself).
    const named = (schema: any) =>
      typeof schema?.$ref === 'string' ? doc.components.schemas[schema.$ref.split('/').pop()] : schema;
    const wrong: unknown[] = [null, true, -1, 1.5, 1e21, [], {}, [{}], 'x'.repeat(3000), '', '\u2028'];
    let cases = 0;
    for (const [template, item] of Object.entries(doc.paths)) {
      if (!template.startsWith('/v1/') || template.includes('/sandbox/')) continue;
      for (const [method, op] of Object.entries(item)) {
        const props = Object.keys(named(op.requestBody?.content?.['application/json']?.schema)?.properties ?? {});
        if (method === 'get' || props.length === 0) continue;
        const path = template.replace(/\{[^}]+\}/g, U);
        const base = Object.fromEntries(props.map((p) => [p, 'x']));
        for (const field of props) {
          for (const value of wrong) {
            const r = await callB(method.toUpperCase(), path, { ...base, [field]: value }, { idempotencyKey: key() });
            cases++;
            // verify-signature answers 200 {valid:false} for any string it can check: that is its job.
            const ok = path === '/v1/webhooks/verify-signature' ? [200, 400] : [400, 404, 413];
            expect(ok, `${method} ${path} ${field}=${JSON.stringify(value).slice(0, 20)}`).toContain(r.status);
          }
        }
      }
    }
    expect(cases).toBeGreaterThan(100);
    expect(await written()).toEqual(before);
  });

  it('numbers that do not read exactly, nesting, NUL and lone surrogates: 400 or 413, no bet, no key', async () => {
    const before = await written();
    const cases: [string, number, string][] = [
      ['{"external_user_id":"u","amount":1e309}', 400, 'VALIDATION_FAILED'],
      ['{"external_user_id":"u","amount":1e-400}', 400, 'VALIDATION_FAILED'],
      ['{"external_user_id":"u","amount":-0}', 400, 'VALIDATION_FAILED'],
      ['{"external_user_id":"u","amount":0.30000000000000004}', 400, 'VALIDATION_FAILED'],
      [`{"external_user_id":"u","amount":${'9'.repeat(400)}}`, 400, 'VALIDATION_FAILED'],
      ['{"external_user_id":"u","amount":1,"auto_cashout":1e309}', 400, 'VALIDATION_FAILED'],
      ['{"external_user_id":"u","amount":1,"auto_cashout":"2"}', 400, 'VALIDATION_FAILED'],
      ['{"external_user_id":"u","external_user_id":"v","amount":1}', 400, 'DUPLICATE_JSON_KEY'],
      ['{"external_user_id":"u","amount":1,"__proto__":{"amount":2}}', 400, 'UNKNOWN_FIELD'],
      ['{"external_user_id":"u\\u0061","amount":1,"__proto__":{"x":1}}', 400, 'UNKNOWN_FIELD'],
      ['{"external_user_id":"u\\ud800","amount":1}', 400, 'MALFORMED_JSON'],
      ['{"external_user_id":"u\\u0000","amount":1}', 400, 'VALIDATION_FAILED'],
      ['\ufeff{"external_user_id":"u","amount":1}', 400, 'MALFORMED_JSON'],
      [`${'['.repeat(5000)}${']'.repeat(5000)}`, 400, 'MALFORMED_JSON'],
      [`${'{"a":'.repeat(40)}1${'}'.repeat(40)}`, 400, 'MALFORMED_JSON'],
      [`{"external_user_id":"${'a'.repeat(1_000_000)}","amount":1}`, 413, 'BODY_TOO_LARGE'],
    ];
    for (const [body, status, code] of cases) {
      const r = await callA('POST', PB, undefined, { rawBody: body, idempotencyKey: key() });
      expect({ body: body.slice(0, 50), status: r.status, code: r.body?.code }).toEqual({
        body: body.slice(0, 50),
        status,
        code,
      });
    }
    const bad = Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]);
    const ts = String(Date.now());
    const res = await request(`${t.baseUrl}/v1/sessions/launch`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-operator-key': op.apiKey,
        'x-timestamp': ts,
        'x-signature': signRequest(op.apiSecret, 'POST', '/v1/sessions/launch', ts, bad),
      },
      body: bad,
    });
    expect(res.statusCode).toBe(400);
    expect(await res.body.json()).toEqual({ error: 'MALFORMED_JSON', message: expect.stringMatching(/UTF-8/) });
    expect(await written()).toEqual(before);
  });

  it('path parameters and query strings out of shape: a 4xx in the surface shape', async () => {
    const cases: [string, number][] = [
      ['/api/public/v1/bets/%2F..%2F', 400],
      ['/api/public/v1/bets/%E2%82%AC', 400],
      ['/api/public/v1/rounds/-0', 400],
      ['/api/public/v1/rounds/9007199254740993', 400],
      ['/api/public/v1/rounds/0x10', 400],
      ['/api/public/v1/rounds/1e3', 400],
      ['/v1/bets/%ZZ', 400],
      ['/v1/bets/%ED%A0%80', 400],
      ['/v1/sandbox/wallet/balances/%FF', 400],
      [`/v1/sandbox/wallet/balances/${'x'.repeat(200)}`, 414],
      ['/v1/bets/a%00b', 400],
      ['/v1/webhook-deliveries?limit=1&limit=2', 400],
      ['/v1/webhook-deliveries?limit=1e309', 400],
      ['/v1/settlements?cursor=%ED%A0%80', 400],
      ['/api/public/v1/compliance/flags?__proto__=1', 400],
      ['/api/public/v1/rounds/current?a[b]=1', 400],
      ['/api/public/v1/rounds/current?=&=', 400],
      ['/fairness/crash?seed=%ED%A0%80', 400],
    ];
    for (const [path, status] of cases) {
      const r = await call(path)('GET', path);
      expect({ path, status: r.status }).toEqual({ path, status });
      expect(r.body).toEqual(path.startsWith('/api/') ? shapeA : shapeB);
    }
  });

  it('Content-Type and Content-Encoding variants: 415 unless plain UTF-8 JSON, no bet written', async () => {
    const before = await written();
    const refused = [
      ['content-type', 'text/plain'],
      ['content-type', 'multipart/form-data; boundary=x'],
      ['content-type', 'application/x-www-form-urlencoded'],
      ['content-type', 'application/json; charset=latin1'],
      ['content-type', 'application/json; charset=utf-8; charset=utf-16'],
      ['content-type', 'application/json-patch+json'],
      ['content-type', '*/*'],
      ['content-encoding', 'gzip'],
      ['content-encoding', 'br'],
      ['content-encoding', 'x-unknown'],
      ['content-encoding', 'identity, gzip'],
    ];
    for (const [name, value] of refused) {
      const r = await callA('POST', PB, undefined, {
        rawBody: BET,
        idempotencyKey: key(),
        headers: { [name!]: value! },
      });
      expect({ value, status: r.status, code: r.body?.code }).toEqual({
        value,
        status: 415,
        code: 'UNSUPPORTED_MEDIA_TYPE',
      });
    }
    expect(await written()).toEqual(before);
  });

  it('request smuggling shapes and broken framing: 400 in the surface shape, connection closed, no bet', async () => {
    const before = await written();
    const head = (extra: string) =>
      `POST ${PB} HTTP/1.1\r\nHost: x\r\n${signedLines('POST', PB, BET)}idempotency-key: ${key()}\r\n` +
      `content-type: application/json\r\n${extra}`;
    const cases = [
      head(`Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n${BET.length.toString(16)}\r\n${BET}\r\n0\r\n\r\n`),
      head(`Transfer-Encoding: chunked\r\n\r\nzz\r\n${BET}\r\n0\r\n\r\n`),
      head(`Content-Length: ${BET.length}\r\nContent-Length: 3\r\n\r\n${BET}`),
      head(`Content-Length: -1\r\n\r\n${BET}`),
      // A shorter Content-Length leaves the rest of the body to be read as the next request line.
      head(`Content-Length: 3\r\n\r\n${BET}`),
      `GET /healthz HTTP/1.1\nHost: x\n\n`,
      `GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n 2\r\n\r\n`,
    ];
    for (const data of cases) {
      const { text, closed } = await raw(data);
      expect(statusOf(text), data.slice(0, 60)).toBe(400);
      expect(closed).toBe(true);
      expect(bodyOf(text)).toEqual(data.includes(PB) ? shapeA : shapeB);
    }
    expect(await written()).toEqual(before);
  });

  it('pipelined requests answer in order; HTTP/1.0 is answered and closed; 100-continue waits', async () => {
    const g = '/api/public/v1/rounds/current';
    const pipe =
      `GET ${g} HTTP/1.1\r\nHost: x\r\n${signedLines('GET', g, '')}\r\n` +
      `POST ${PB} HTTP/1.1\r\nHost: x\r\n${signedLines('POST', PB, '{')}idempotency-key: ${key()}\r\n` +
      `content-type: application/json\r\nContent-Length: 1\r\n\r\n{` +
      `GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n`;
    const piped = await raw(pipe);
    const statuses = [...piped.text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]));
    // The malformed body is refused and its connection closed: the request after it is never read.
    expect(statuses).toEqual([404, 400]);
    expect(piped.text).toContain('ROUND_NOT_FOUND');
    expect(piped.text).toContain('MALFORMED_JSON');

    const old = await raw(`GET ${g} HTTP/1.0\r\n${signedLines('GET', g, '')}\r\n`);
    expect(statusOf(old.text)).toBe(404);
    expect(old.closed).toBe(true);

    const body = '{"external_user_id":"u","amount":"1"}';
    const socket = net.connect(port, '127.0.0.1');
    const got: string[] = [];
    socket.on('data', (d) => got.push(d.toString('latin1')));
    socket.write(
      `POST ${PB} HTTP/1.1\r\nHost: x\r\n${signedLines('POST', PB, body)}idempotency-key: ${key()}\r\n` +
        `content-type: application/json\r\nExpect: 100-continue\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    await new Promise((r) => setTimeout(r, 200));
    expect(got.join('')).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\n$/);
    socket.write(body);
    await new Promise((r) => setTimeout(r, 300));
    socket.destroy();
    expect(got.join('')).toMatch(/HTTP\/1\.1 400 Bad Request[\s\S]*"field \\"amount\\" must be an integer/);
  });

  it('duplicated authentication headers are one 401, and a duplicated Idempotency-Key a 400', async () => {
    const g = '/api/public/v1/rounds/current';
    for (const extra of ['x-api-key: other\r\n', 'x-signature: 00\r\n', 'x-timestamp: 1\r\n']) {
      const { text } = await raw(
        `GET ${g} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${signedLines('GET', g, '')}${extra}\r\n`,
      );
      expect(statusOf(text)).toBe(401);
      expect(bodyOf(text)).toEqual(shapeA);
    }
    const before = await written();
    const dup =
      `POST ${PB} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${signedLines('POST', PB, BET)}` +
      `idempotency-key: a1\r\nidempotency-key: a2\r\ncontent-type: application/json\r\n` +
      `Content-Length: ${BET.length}\r\n\r\n${BET}`;
    const { text } = await raw(dup);
    expect(statusOf(text)).toBe(400);
    expect(bodyOf(text)).toEqual({ error: expect.any(String), code: 'VALIDATION_FAILED' });
    expect(await written()).toEqual(before);
  });

  // An Expect header other than 100-continue used to be answered by Node's default handler: 417 with an
  // empty chunked body, not an error in the surface's shape (docs/security.md: "Every answer to bad
  // input is a 4xx in the error shape of the surface it was sent to").
  it('an Expect other than 100-continue is refused in the surface shape', async () => {
    const { text } = await raw(
      `POST ${PB} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${signedLines('POST', PB, BET)}` +
        `idempotency-key: ${key()}\r\ncontent-type: application/json\r\nExpect: 200-ok\r\n` +
        `Content-Length: ${BET.length}\r\n\r\n${BET}`,
    );
    expect(statusOf(text)).toBeGreaterThanOrEqual(400);
    expect(bodyOf(text)).toEqual(shapeA);
  });

  // An HTTP/1.1 request without Host used to be refused by Node itself (400, empty body,
  // requireHostHeader) before Fastify or clientErrorHandler saw it: no error shape, no code.
  it('an HTTP/1.1 request without Host is refused in the surface shape; HTTP/1.0 may leave it out', async () => {
    const { text } = await raw(`GET /api/public/v1/rounds/current HTTP/1.1\r\n\r\n`);
    expect(statusOf(text)).toBe(400);
    expect(bodyOf(text)).toEqual(shapeA);
    expect(bodyOf(text)).toMatchObject({ code: 'VALIDATION_FAILED' });
    const surfaceB = await raw(`GET /v1/rounds/current HTTP/1.1\r\n\r\n`);
    expect(statusOf(surfaceB.text)).toBe(400);
    expect(bodyOf(surfaceB.text)).toMatchObject({ error: 'VALIDATION_FAILED' });
    const old = await raw(`GET /healthz HTTP/1.0\r\n\r\n`);
    expect(statusOf(old.text)).toBe(200);
  });

  // CONNECT had no 'connect' listener, so Node destroyed the socket without any answer; every other
  // method gets a 404 NOT_FOUND in the surface shape, and now CONNECT too.
  it('CONNECT gets an answer rather than a dropped connection', async () => {
    const { text } = await raw(`CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n`);
    expect(statusOf(text)).toBe(404);
    expect(bodyOf(text)).toMatchObject({ error: 'NOT_FOUND' });
  });
});
