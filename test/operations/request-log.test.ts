import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config';
import { client, startTestApp, type TestApp, type TestOperator } from '../support/harness';

/** The service's log as parsed JSON lines, at info level. */
function capturedLog() {
  const lines: Record<string, any>[] = [];
  const logger = pino(
    { level: 'info' },
    new Writable({
      write(chunk, _encoding, next) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        next();
      },
    }),
  );
  return { logger, lines, requests: () => lines.filter((l) => l.msg === 'request' || l.msg === 'request failed') };
}

describe('access log: one line per request', () => {
  const log = capturedLog();
  let t: TestApp;
  let op: TestOperator;
  beforeAll(async () => {
    t = await startTestApp({ logger: log.logger, engines: false });
    op = await t.createOperator({ name: 'logged' });
  });
  afterAll(async () => t?.close());

  it('writes method, route, status, operator, trace id and duration for 2xx and 4xx alike', async () => {
    const call = client(t.baseUrl, op);
    const traceOk = randomUUID();
    const ok = await call('GET', '/api/public/v1/bets?external_user_id=p1', undefined, {
      headers: { 'x-request-id': traceOk },
    });
    expect(ok.status).toBe(200);
    const unknownKey = await client(t.baseUrl, { ...op, apiKey: 'pk_nobody' })('GET', '/api/public/v1/rounds/current');
    expect(unknownKey.status).toBe(401);
    const malformed = await call('GET', '/api/public/v1/bets/not-a-bet-id');
    expect(malformed.status).toBe(400);
    const noRoute = await fetch(`${t.baseUrl}/nowhere?token=secret-launch-token`);
    expect(noRoute.status).toBe(404);

    const lines = log.requests();
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatchObject({
      level: 30,
      msg: 'request',
      reqId: traceOk,
      method: 'GET',
      route: '/api/public/v1/bets',
      status: 200,
      operator: op.id,
    });
    expect(lines[0]?.ms).toBeGreaterThanOrEqual(0);
    // The route's template, never the query (player ids) or a path's ids.
    expect(lines[0]).not.toHaveProperty('url');
    expect(lines[1]).toMatchObject({
      level: 30,
      status: 401,
      operator: null,
      route: '/api/public/v1/rounds/current',
      reqId: unknownKey.headers['x-request-id'],
    });
    expect(lines[2]).toMatchObject({ status: 400, route: expect.stringMatching(/^\/api\/public\/v1\/bets\/:/) });
    // No route matched: the path shows, with a launch token's value redacted.
    expect(lines[3]).toMatchObject({ status: 404, route: null, url: '/nowhere?token=%5Bredacted%5D' });
    expect(JSON.stringify(lines)).not.toContain('secret-launch-token');
  });
});

describe('access log settings', () => {
  it('REQUEST_LOG=failures writes 4xx only, and off writes nothing below 500', async () => {
    for (const [mode, expected] of [
      ['failures', [401]],
      ['off', []],
    ] as const) {
      const log = capturedLog();
      const t = await startTestApp({ logger: log.logger, engines: false, env: { REQUEST_LOG: mode } });
      try {
        const op = await t.createOperator();
        expect((await fetch(`${t.baseUrl}/healthz`)).status).toBe(200);
        const bad = await client(t.baseUrl, { ...op, apiSecret: 'sk_wrong' })('GET', '/api/public/v1/rounds/current');
        expect(bad.status).toBe(401);
        expect(
          log.requests().map((l) => l.status),
          mode,
        ).toEqual(expected);
      } finally {
        await t.close();
      }
    }
  });

  it('REQUEST_LOG_SAMPLE_PERCENT=25 writes exactly one success in four, and every failure', async () => {
    const log = capturedLog();
    const t = await startTestApp({ logger: log.logger, engines: false, env: { REQUEST_LOG_SAMPLE_PERCENT: '25' } });
    try {
      for (let i = 0; i < 8; i++) expect((await fetch(`${t.baseUrl}/healthz`)).status).toBe(200);
      expect((await fetch(`${t.baseUrl}/nowhere`)).status).toBe(404);
      expect(log.requests().map((l) => l.status)).toEqual([200, 200, 404]);
    } finally {
      await t.close();
    }
  });

  it('refuses a mode or percentage it does not know, naming the variable', () => {
    const env = { APP_ENV: 'test' };
    expect(loadConfig(env).requestLog).toEqual({ mode: 'all', samplePercent: 100 });
    expect(loadConfig({ ...env, REQUEST_LOG: 'Failures', REQUEST_LOG_SAMPLE_PERCENT: '5' }).requestLog).toEqual({
      mode: 'failures',
      samplePercent: 5,
    });
    expect(() => loadConfig({ ...env, REQUEST_LOG: 'some' })).toThrow(
      'REQUEST_LOG must be one of all, failures, off, got "some"',
    );
    expect(() => loadConfig({ ...env, REQUEST_LOG_SAMPLE_PERCENT: '0' })).toThrow('REQUEST_LOG_SAMPLE_PERCENT');
    expect(() => loadConfig({ ...env, REQUEST_LOG_SAMPLE_PERCENT: '2.5' })).toThrow('REQUEST_LOG_SAMPLE_PERCENT');
  });
});
