import pino from 'pino';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/store/database';
import { client, startTestApp, type TestApp } from '../support/harness';

describe('server faults', () => {
  let t: TestApp;
  let store: Database;
  const lines: string[] = [];
  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _encoding, next) {
        lines.push(...String(chunk).split('\n').filter(Boolean));
        next();
      },
    });
    const logger = pino({ level: 'warn' }, sink);
    t = await startTestApp({ engines: false, logger, beforeStart: async (db) => void (store = db) });
  });
  afterAll(async () => {
    await t?.app.http.close();
  });

  it('answer 500 with a trace id and nothing internal', async () => {
    const op = await t.createOperator();
    const raw = store as unknown as { raw: { close(): void } };
    raw.raw.close(); // the store becomes unusable: every query now throws
    const r = await client(t.baseUrl, op)('GET', '/api/public/v1/rounds/current', undefined, {
      headers: { 'x-request-id': 'trace-abc-123' },
    });
    expect(r.status).toBe(500);
    expect(r.body).toEqual({ error: 'internal error', code: 'INTERNAL', trace_id: 'trace-abc-123' });
    expect(r.headers['x-request-id']).toBe('trace-abc-123');
    expect(r.text).not.toMatch(/sqlite|database|stack|\.ts/i);
    // The failure is logged once with its request id, each key once (a repeated key is not valid for
    // every log reader).
    const failed = lines.filter((l) => l.includes('"msg":"request failed"') && l.includes('"status":500'));
    expect(failed).toHaveLength(1);
    expect(failed[0]!.match(/"reqId":/g)).toHaveLength(1);
    expect(JSON.parse(failed[0]!)).toMatchObject({ reqId: 'trace-abc-123', status: 500, level: 50 });
  });
});
