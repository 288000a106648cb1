import { mkdtempSync, statSync, writeFileSync, chmodSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STREAM_ALLOWANCE } from '../../src/games/engine/live-streams';

const MAX_STREAMS_PER_SESSION = STREAM_ALLOWANCE.playerSession;
import { SecretBox } from '../../src/operators/secret-box';
import { SqliteDatabase } from '../../src/store/sqlite';
import { client, startTestApp, STORES, type TestApp } from '../support/harness';

const PASSWORD = 'long enough password';
const deep = (n: number): string => '['.repeat(n) + ']'.repeat(n);

async function launch(t: TestApp): Promise<string> {
  const op = await t.createOperator();
  const body = { player_ref: 'p1', currency: 'EUR', return_url: 'https://casino.test/' };
  const r = await client(t.baseUrl, op, 'B')('POST', '/v1/sessions/launch', body);
  expect(r.status).toBe(200);
  return new URL(r.body.launch_url).searchParams.get('token')!;
}

/** Sends a request with raw bytes on a socket (for what an HTTP client library would refuse to send). */
function rawHttp(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(text));
    const chunks: Buffer[] = [];
    socket.on('data', (c) => chunks.push(c));
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.on('error', reject);
  });
}

describe('small doors', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ engines: false });
  });
  afterAll(async () => t?.close());

  it('?notice= shows only the notices the dashboard defines, never what every object inherits', async () => {
    const op = await t.createOperator();
    const auth = t.app.services.dashboardUsers;
    await auth.createUser({ operatorId: op.id, email: 'n@example.com', password: PASSWORD });
    const jar: string[] = [];
    const go = async (method: string, path: string, form?: Record<string, string>) => {
      const res = await fetch(`${t.baseUrl}${path}`, {
        method,
        redirect: 'manual',
        headers: { cookie: jar.join('; '), ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
        body: form ? new URLSearchParams(form) : undefined,
      });
      for (const c of res.headers.getSetCookie()) jar.push(c.split(';')[0]!);
      return { status: res.status, text: await res.text() };
    };
    const form = await go('GET', '/dashboard/login');
    const csrf = /name="_csrf" value="([^"]+)"/.exec(form.text)![1]!;
    const signIn = { _csrf: csrf, email: 'n@example.com', password: PASSWORD };
    expect((await go('POST', '/dashboard/login', signIn)).status).toBe(303);
    for (const key of ['toString', 'constructor', '__proto__', 'hasOwnProperty']) {
      const page = await go('GET', `/dashboard/webhooks?notice=${key}`);
      expect(page.status).toBe(200);
      expect(page.text).not.toContain('class="notice"');
      expect(page.text).not.toMatch(/native code|function/);
    }
    const resent = await go('GET', '/dashboard/webhooks?notice=resent');
    expect(resent.text).toContain('Delivery queued again as a new delivery.');
  });

  it("404 outside every surface comes in the surface shape, not Fastify's", async () => {
    for (const path of ['/nope', '/play/nope', '/v2/rounds/current']) {
      const r = await request(`${t.baseUrl}${path}`);
      expect(r.statusCode).toBe(404);
      expect(await r.body.json()).toEqual({ error: 'NOT_FOUND', message: `no route GET ${path}` });
    }
    const a = await request(`${t.baseUrl}/api/public/v2/rounds`);
    expect(a.statusCode).toBe(404);
    expect(await a.body.json()).toEqual({ error: 'no route GET /api/public/v2/rounds', code: 'NOT_FOUND' });
  });

  it('414 for an over-long path segment, in each surface shape', async () => {
    const a = await request(`${t.baseUrl}/api/public/v1/bets/${'a'.repeat(300)}`);
    expect(a.statusCode).toBe(414);
    expect(await a.body.json()).toEqual({ error: expect.any(String), code: 'URI_TOO_LONG' });
    const b = await request(`${t.baseUrl}/v1/rounds/${'a'.repeat(300)}`);
    expect(b.statusCode).toBe(414);
    expect(await b.body.json()).toEqual({ error: 'URI_TOO_LONG', message: expect.any(String) });
  });

  it('431 for oversized headers, in each surface shape', async () => {
    const port = new URL(t.baseUrl).port;
    const big = 'y'.repeat(20_000);
    const request431 = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\nX-Big: ${big}\r\n\r\n`;
    const bodyOf = (response: string): unknown => JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4));
    const a = await rawHttp(Number(port), request431('/api/public/v1/rounds/current'));
    expect(a).toMatch(/^HTTP\/1\.1 431 /);
    expect(bodyOf(a)).toEqual({ error: expect.any(String), code: 'HEADERS_TOO_LARGE' });
    const b = await rawHttp(Number(port), `GET /v1/rounds/current HTTP/1.1\r\nHost: x\r\nX-Big: ${big}\r\n\r\n`);
    expect(b).toMatch(/^HTTP\/1\.1 431 /);
    expect(bodyOf(b)).toEqual({ error: 'HEADERS_TOO_LARGE', message: expect.any(String) });
  });

  it('a deeply nested body is a 400 that says so, with nothing about the parser', async () => {
    const op = await t.createOperator();
    const call = client(t.baseUrl, op);
    // An escape sends the body down the key-checking parser, which recurses per level.
    const escaped = await call('POST', '/api/public/v1/place-bet', undefined, {
      rawBody: `{"external_user_id":"p\\u0041","amount":100,"x":${deep(5000)}}`,
      idempotencyKey: 'deep-1',
    });
    expect(escaped.status).toBe(400);
    expect(escaped.body).toEqual({ error: 'the JSON body is nested more than 32 levels deep', code: 'MALFORMED_JSON' });
    expect(escaped.text).not.toMatch(/stack|RangeError/i);
    const rawBody = `{"player_ref":${deep(40)}}`;
    const plain = await client(t.baseUrl, op, 'B')('POST', '/v1/sessions/launch', undefined, { rawBody });
    expect(plain.status).toBe(400);
    const tooDeep = { error: 'MALFORMED_JSON', message: 'the JSON body is nested more than 32 levels deep' };
    expect(plain.body).toEqual(tooDeep);
  });

  it(`caps live streams per player session at ${MAX_STREAMS_PER_SESSION} (429); closing one frees a slot`, async () => {
    const token = await launch(t);
    const controllers: AbortController[] = [];
    const open = async (path: string) => {
      const controller = new AbortController();
      const res = await request(`${t.baseUrl}${path}?token=${token}`, { signal: controller.signal });
      controllers.push(controller);
      return res;
    };
    try {
      for (let i = 0; i < MAX_STREAMS_PER_SESSION; i++) {
        const res = await open(i % 2 ? '/play/crash/feed' : '/play/feed');
        expect(res.statusCode).toBe(200);
        expect(res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
      }
      const refused = await open('/play/feed');
      expect(refused.statusCode).toBe(429);
      expect(refused.headers['retry-after']).toBe('5');
      const tooMany = expect.stringMatching(/already has 3 live streams open/);
      expect(await refused.body.json()).toEqual({ error: 'RATE_LIMITED', message: tooMany });
      // Another session is not affected.
      const otherToken = await launch(t);
      const c = new AbortController();
      controllers.push(c);
      const otherRes = await request(`${t.baseUrl}/play/feed?token=${otherToken}`, { signal: c.signal });
      expect(otherRes.statusCode).toBe(200);

      controllers[0]!.abort();
      let again = 0;
      for (let i = 0; i < 100 && again !== 200; i++) {
        await new Promise((r) => setTimeout(r, 50));
        const res = await open('/play/feed');
        again = res.statusCode;
        if (again !== 200) await res.body.text();
      }
      expect(again).toBe(200);
    } finally {
      for (const c of controllers) c.abort();
    }
  });
});

describe('HSTS', () => {
  it('is sent in production behind the declared TLS proxy, and not in development', async () => {
    const behindProxy = {
      APP_ENV: 'production',
      TRUST_PROXY_TLS: 'true',
      TRUST_PROXY_ADDRESSES: '127.0.0.1',
      METRICS_TOKEN: 'scrape',
    };
    const prod = await startTestApp({ engines: false, env: behindProxy });
    try {
      for (const path of ['/healthz', '/dashboard/login', '/nope']) {
        const r = await request(`${prod.baseUrl}${path}`);
        await r.body.text();
        expect(r.headers['strict-transport-security'], path).toBe('max-age=31536000; includeSubDomains');
      }
    } finally {
      await prod.close();
    }
    const dev = await startTestApp({ engines: false, env: { APP_ENV: 'development' } });
    try {
      const r = await request(`${dev.baseUrl}/healthz`);
      await r.body.text();
      expect(r.headers['strict-transport-security']).toBeUndefined();
    } finally {
      await dev.close();
    }
  });
});

describe('files at rest', () => {
  const mode = (file: string): string => (statSync(file).mode & 0o777).toString(8);

  it('the SQLite database, its -wal and -shm are readable by the owner only', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rbs-perm-'));
    const filename = join(dir, 'data', 'service.db');
    const db = new SqliteDatabase({ filename });
    try {
      await db.transaction((tx) => tx.run('CREATE TABLE t (x INTEGER)'));
      await db.transaction((tx) => tx.run('INSERT INTO t VALUES (1)'));
      expect([mode(filename), mode(`${filename}-wal`), mode(`${filename}-shm`)]).toEqual(['600', '600', '600']);
      expect(mode(join(dir, 'data'))).toBe('700');
    } finally {
      await db.close();
    }
  });

  it('files an older version left world-readable are narrowed on open, the master key file too', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rbs-perm-'));
    const filename = join(dir, 'service.db');
    const first = new SqliteDatabase({ filename });
    await first.transaction((tx) => tx.run('CREATE TABLE t (x INTEGER)'));
    await first.close();
    chmodSync(filename, 0o644);
    const again = new SqliteDatabase({ filename });
    try {
      expect(mode(filename)).toBe('600');
    } finally {
      await again.close();
    }
    writeFileSync(join(dir, 'master.key'), 'ab'.repeat(32), { mode: 0o644 });
    chmodSync(join(dir, 'master.key'), 0o644);
    SecretBox.fromDataDir(dir);
    expect(mode(join(dir, 'master.key'))).toBe('600');
  });
});

describe.each(STORES)('player page reads on %s', (store) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ store, engines: false });
  });
  afterAll(async () => t?.close());

  it('answer from committed data while writers hold every write connection, never an uncommitted write', async () => {
    const token = await launch(t);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const db = t.app.db;
    // Writers that hold their connection (PostgreSQL: the whole write pool; SQLite: the writer).
    // The first one also expires the player's session, and then rolls back.
    const holders = Array.from({ length: store === 'postgres' ? 10 : 1 }, (_, i) =>
      db
        .transaction(async (tx) => {
          if (i === 0) await tx.run('UPDATE sessions SET expires_at = 0');
          else await tx.get('SELECT 1 AS one');
          await gate;
          throw new Error('rolled back on purpose');
        })
        .catch(() => undefined),
    );
    try {
      await new Promise((r) => setTimeout(r, 300));
      const res = await request(`${t.baseUrl}/play/bets?token=${token}`, { signal: AbortSignal.timeout(5000) });
      expect(res.statusCode).toBe(200);
      expect(await res.body.json()).toEqual({ bets: [] });
      const page = await request(`${t.baseUrl}/play/crash?token=${token}`, { signal: AbortSignal.timeout(5000) });
      expect(page.statusCode).toBe(200);
      await page.body.text();
    } finally {
      release();
      await Promise.all(holders);
    }
  });
});
