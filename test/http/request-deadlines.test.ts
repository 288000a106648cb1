import { createServer } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestDeadlines } from '../../src/http/server';
import { signRequest } from '../../src/signing/request-signature';
import { client, startTestApp, type TestApp, type TestOperator } from '../support/harness';

const TIMEOUT_MS = 500;
/** The 408 must come near the timeout: the setting plus the check interval plus scheduling slack. */
const BOUND_MS = 3_000;

interface RawAnswer {
  text: string;
  /** Whether the server closed the connection before the bound. */
  closed: boolean;
  ms: number;
}

/** Opens a socket, runs `send` on it, and collects what comes back until the server closes it or the bound passes. */
function rawExchange(port: number, send: (socket: Socket) => void, boundMs = BOUND_MS): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const chunks: Buffer[] = [];
    const socket = connect(port, '127.0.0.1', () => send(socket));
    const finish = (closed: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ text: Buffer.concat(chunks).toString('utf8'), closed, ms: Date.now() - started });
    };
    const timer = setTimeout(() => finish(false), boundMs);
    socket.on('data', (c) => chunks.push(c));
    socket.on('close', () => finish(true));
    socket.on('error', (e: NodeJS.ErrnoException) => (e.code === 'ECONNRESET' ? finish(true) : reject(e)));
  });
}

/** A signed request's head (request line and headers) for `body`, with the body itself to send apart. */
function signedHead(op: TestOperator, surface: 'A' | 'B', path: string, body: string, extra = ''): string {
  const timestamp = String(Date.now());
  const signature = signRequest(op.apiSecret, 'POST', path, timestamp, body);
  const auth =
    surface === 'A'
      ? `x-api-key: ${op.apiKey}\r\nx-timestamp: ${timestamp}\r\nx-signature: ${signature}\r\n`
      : `X-Operator-Key: ${op.apiKey}\r\nX-Timestamp: ${timestamp}\r\nX-Signature: ${signature}\r\n`;
  return (
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}${extra}` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`
  );
}

const statusOf = (text: string): number => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
const bodyOf = (text: string): unknown => JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));

const LAUNCH = JSON.stringify({ player_ref: 'p1', currency: 'EUR', return_url: 'https://casino.test/' });

describe('request deadlines', () => {
  it('checks every tenth of the timeout (at least 100 ms), headers within it or 60 s, as Node accepts', () => {
    expect(requestDeadlines(30_000)).toEqual({
      requestTimeout: 30_000,
      headersTimeout: 30_000,
      connectionsCheckingInterval: 3_000,
    });
    expect(requestDeadlines(500).connectionsCheckingInterval).toBe(100);
    expect(requestDeadlines(600_000)).toMatchObject({ headersTimeout: 60_000, connectionsCheckingInterval: 60_000 });
    // Node refuses headersTimeout > requestTimeout when it builds the server.
    for (const ms of [100, 30_000, 600_000]) createServer(requestDeadlines(ms)).close();
  });
});

describe('requests that stop arriving', () => {
  let t: TestApp;
  let op: TestOperator;
  let port: number;

  beforeAll(async () => {
    t = await startTestApp({ engines: false, env: { REQUEST_TIMEOUT_MS: String(TIMEOUT_MS) } });
    op = await t.createOperator();
    port = Number(new URL(t.baseUrl).port);
  });
  afterAll(async () => t?.close());

  it('answers a stalled Surface B body with 408 REQUEST_TIMEOUT in its shape and closes the connection', async () => {
    const answer = await rawExchange(port, (socket) => {
      socket.write(signedHead(op, 'B', '/v1/sessions/launch', LAUNCH));
      socket.write(LAUNCH.slice(0, 10));
    });
    expect(answer.closed).toBe(true);
    expect(statusOf(answer.text)).toBe(408);
    expect(answer.text).toMatch(/\r\nconnection: close\r\n/i);
    expect(bodyOf(answer.text)).toEqual({ error: 'REQUEST_TIMEOUT', message: 'the request was not received in time' });
    expect(answer.ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
  });

  it('answers a stalled Surface A body in Surface A shape', async () => {
    const body = JSON.stringify({ external_user_id: 'u', amount: 100 });
    const answer = await rawExchange(port, (socket) => {
      socket.write(signedHead(op, 'A', '/api/public/v1/place-bet', body, 'Idempotency-Key: stalled-1\r\n'));
      socket.write(body.slice(0, 5));
    });
    expect(answer.closed).toBe(true);
    expect(statusOf(answer.text)).toBe(408);
    expect(bodyOf(answer.text)).toEqual({ error: 'the request was not received in time', code: 'REQUEST_TIMEOUT' });
  });

  it('answers stalled headers with 408 within the same bound', async () => {
    const answer = await rawExchange(port, (socket) => socket.write('GET /v1/rounds/current HTTP/1.1\r\nHost: x\r\n'));
    expect(answer.closed).toBe(true);
    expect(statusOf(answer.text)).toBe(408);
    expect(bodyOf(answer.text)).toMatchObject({ error: 'REQUEST_TIMEOUT' });
  });

  it('still serves a body sent in pieces within the time, and keeps an idle keep-alive connection open', async () => {
    const first = signedHead(op, 'B', '/v1/sessions/launch', LAUNCH);
    const second = JSON.stringify({ player_ref: 'p2', currency: 'EUR', return_url: 'https://casino.test/' });
    const answer = await rawExchange(
      port,
      (socket) => {
        socket.write(first);
        socket.write(LAUNCH.slice(0, 10));
        setTimeout(() => socket.write(LAUNCH.slice(10)), 100);
        // Idle between requests for longer than the request timeout: that is the keep-alive timeout's business.
        setTimeout(() => {
          socket.write(signedHead(op, 'B', '/v1/sessions/launch', second));
          socket.write(second);
        }, TIMEOUT_MS * 3);
      },
      TIMEOUT_MS * 3 + 1_000,
    );
    const statuses = [...answer.text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]));
    expect(statuses).toEqual([200, 200]);
    expect(answer.closed).toBe(false);
  });

  it('serves an ordinary request', async () => {
    const r = await client(t.baseUrl, op, 'B')('POST', '/v1/sessions/launch', JSON.parse(LAUNCH));
    expect(r.status).toBe(200);
  });
});
