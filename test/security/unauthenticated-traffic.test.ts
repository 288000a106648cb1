import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signRequest } from '../../src/signing/request-signature';
import { client, startTestApp, type TestApp, type TestOperator } from '../support/harness';

/**
 * Traffic that cannot authenticate costs little and is limited per client address: failures are
 * counted and answered 429 with Retry-After past the budget; the API key and timestamp are checked
 * from the headers before a body byte is read; a declared oversized body is refused with 413.
 */

interface RawAnswer {
  status: number;
  headers: string;
  body: string;
}

/** Sends only a request head (no body, whatever Content-Length says) and reads the answer. */
function sendHeadOnly(baseUrl: string, head: string, timeoutMs = 3_000): Promise<RawAnswer> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let data = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${timeoutMs} ms: the server is waiting for the body`));
    }, timeoutMs);
    const finish = () => {
      clearTimeout(timer);
      const [headers, body = ''] = data.split('\r\n\r\n');
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1]), headers: headers!, body });
      socket.destroy();
    };
    socket.on('data', (chunk) => {
      data += chunk.toString('latin1');
      const [, body] = data.split('\r\n\r\n');
      const length = /content-length: (\d+)/i.exec(data)?.[1];
      if (body !== undefined && length !== undefined && Buffer.byteLength(body, 'latin1') >= Number(length)) finish();
    });
    socket.on('end', finish);
    socket.on('error', reject);
    socket.write(head);
  });
}

const head = (method: string, path: string, headers: Record<string, string>) =>
  `${method} ${path} HTTP/1.1\r\nhost: localhost\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}`)
    .join('\r\n')}\r\n\r\n`;

describe('unauthenticated traffic', () => {
  let t: TestApp;
  let op: TestOperator;

  beforeAll(async () => {
    t = await startTestApp({ engines: false, env: { AUTH_FAILURE_LIMIT: '6', AUTH_FAILURE_WINDOW_S: '3' } });
    op = await t.createOperator();
  });
  afterAll(async () => t?.close());

  it('refuses an unknown API key from the headers alone, without waiting for the body', async () => {
    const answer = await sendHeadOnly(
      t.baseUrl,
      head('POST', '/api/public/v1/place-bet', {
        'x-api-key': 'nobody',
        'x-timestamp': String(Date.now()),
        'x-signature': 'a'.repeat(64),
        'content-type': 'application/json',
        'content-length': '1000',
      }),
    );
    expect(answer.status).toBe(401);
    expect(JSON.parse(answer.body)).toMatchObject({ code: 'UNKNOWN_API_KEY' });
  });

  it('refuses a stale timestamp from the headers alone, on Surface B too', async () => {
    const answer = await sendHeadOnly(
      t.baseUrl,
      head('POST', '/v1/sessions/launch', {
        'x-operator-key': op.apiKey,
        'x-timestamp': String(Date.now() - 3_600_000),
        'x-signature': 'a'.repeat(64),
        'content-type': 'application/json',
        'content-length': '500',
      }),
    );
    expect(answer.status).toBe(401);
    expect(JSON.parse(answer.body)).toMatchObject({ error: 'STALE_TIMESTAMP' });
  });

  it('answers a declared oversized body with 413 in the surface shape, before reading it', async () => {
    const timestamp = String(Date.now());
    const answer = await sendHeadOnly(
      t.baseUrl,
      head('POST', '/api/public/v1/place-bet', {
        'x-api-key': op.apiKey,
        'x-timestamp': timestamp,
        'x-signature': signRequest(op.apiSecret, 'POST', '/api/public/v1/place-bet', timestamp, ''),
        'content-type': 'application/json',
        'content-length': String(50 * 1024 * 1024),
      }),
    );
    expect(answer.status).toBe(413);
    const error = 'the request body is larger than the limit for this endpoint';
    expect(JSON.parse(answer.body)).toEqual({ code: 'BODY_TOO_LARGE', error });
  });

  it('cuts a chunked body at the limit with 413', async () => {
    const timestamp = String(Date.now());
    const { hostname, port } = new URL(t.baseUrl);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), hostname);
      let data = '';
      socket.on('data', (c) => (data += c.toString('latin1')));
      socket.on('close', () => resolve(data));
      socket.on('error', () => resolve(data));
      setTimeout(() => reject(new Error('no answer to an oversized chunked body')), 5_000).unref();
      socket.write(
        head('POST', '/api/public/v1/place-bet', {
          'x-api-key': op.apiKey,
          'x-timestamp': timestamp,
          'x-signature': 'a'.repeat(64),
          'content-type': 'application/json',
          'transfer-encoding': 'chunked',
          connection: 'close',
        }),
      );
      const chunk = Buffer.alloc(8 * 1024, 0x20);
      for (let i = 0; i < 4; i++) socket.write(`${chunk.length.toString(16)}\r\n${chunk.toString('latin1')}\r\n`);
      socket.write('0\r\n\r\n');
    });
    expect(answer).toMatch(/^HTTP\/1\.1 413/);
    expect(answer).toContain('"code":"BODY_TOO_LARGE"');
  });

  it('limits failed authentication per address, surfaces and management routes alike: 429, Retry-After', async () => {
    // Two failures above already counted; four more reach the budget of six.
    const wrong = { ...op, apiSecret: 'not-the-secret' };
    const a = client(t.baseUrl, wrong, 'A');
    const b = client(t.baseUrl, wrong, 'B');
    expect((await a('GET', '/api/public/v1/compliance/flags')).status).toBe(401);
    expect((await b('GET', '/v1/webhook-endpoints')).status).toBe(401);
    expect((await a('POST', '/api/public/v1/webhook-endpoints', { url: 'https://x.example.test/h' })).status).toBe(401);
    expect((await b('GET', '/v1/settlements')).status).toBe(401);

    const limited = await b('GET', '/v1/rounds/current');
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({ error: 'RATE_LIMITED', message: expect.stringContaining('failed authentications') });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(3);

    // The address is refused even with good credentials until the window ends.
    const good = client(t.baseUrl, op, 'A');
    const refused = await good('GET', '/api/public/v1/rounds/current');
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('RATE_LIMITED');
    await new Promise((r) => setTimeout(r, Number(limited.headers['retry-after']) * 1000 + 200));
    expect((await good('GET', '/api/public/v1/compliance/flags')).status).toBe(200);
  });
});
