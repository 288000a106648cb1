import BetterSqlite3 from 'better-sqlite3';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChildService } from '../support/child-service';
import { request } from 'undici';
import { client, eventually } from '../support/harness';

describe('graceful shutdown', () => {
  const svc = new ChildService({ CRASH_BETTING_WINDOW_MS: '60000' });
  let call: ReturnType<typeof client>;

  beforeAll(async () => {
    await svc.start();
    const created = await svc.admin('operator', 'create', '--name', 'graceful');
    call = client(svc.baseUrl, { id: created.operator_id, apiKey: created.api_key, apiSecret: created.api_secret });
    await eventually(async () => (await call('GET', '/api/public/v1/rounds/current')).body?.status === 'open', 15_000);
  }, 60_000);
  afterAll(async () => {
    await svc.stop();
  });

  it('finishes in-flight requests on SIGTERM, commits what it acknowledged and exits 0', async () => {
    const answered: number[] = [];
    const inFlight = Array.from({ length: 40 }, (_, i) =>
      call(
        'POST',
        '/api/public/v1/place-bet',
        { external_user_id: 'g', amount: 10 + i },
        { idempotencyKey: `g-${i}` },
      ).then(
        (r) => answered.push(r.status),
        () => undefined, // refused after the listener closed: never acknowledged
      ),
    );
    await eventually(async () => answered.length > 0, 10_000, 1);
    const exitCode = await svc.stop();
    await Promise.all(inFlight);
    expect(exitCode).toBe(0);
    expect(answered.filter((s) => s !== 200 && s !== 503)).toEqual([]);
    const acknowledged = answered.filter((s) => s === 200).length;
    const db = new BetterSqlite3(join(svc.dataDir, 'service.db'), { readonly: true });
    const count = (db.prepare('SELECT COUNT(*) AS n FROM bets').get() as { n: number }).n;
    db.close();
    expect(count).toBeGreaterThanOrEqual(acknowledged);
    expect(acknowledged).toBeGreaterThan(0);
  }, 60_000);
});

describe('drain on SIGTERM', () => {
  const svc = new ChildService({ DRAIN_DELAY_MS: '2000' });
  let call: ReturnType<typeof client>;

  beforeAll(async () => {
    await svc.start();
    const created = await svc.admin('operator', 'create', '--name', 'drain');
    call = client(svc.baseUrl, { id: created.operator_id, apiKey: created.api_key, apiSecret: created.api_secret });
  }, 60_000);
  afterAll(async () => {
    await svc.stop();
  });

  it('reports not ready first, keeps serving through the drain delay, then exits 0', async () => {
    const readyz = async () => {
      const r = await request(`${svc.baseUrl}/readyz`);
      const body = (await r.body.json()) as { ready: boolean; checks: Record<string, string> };
      return { status: r.statusCode, body };
    };
    await eventually(async () => (await readyz()).status === 200, 15_000);

    const exit = svc.stop();
    const draining = await eventually(
      async () => {
        const r = await readyz();
        return r.status === 503 ? r : undefined;
      },
      1_500,
      20,
    );
    expect(draining.body).toMatchObject({ ready: false, checks: { drain: 'draining' } });
    // Out of rotation but still serving: a request that reaches it now is answered normally.
    expect((await call('GET', '/api/public/v1/rounds/current')).status).toBe(200);
    expect(await exit).toBe(0);
  }, 30_000);
});
