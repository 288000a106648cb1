import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, eventually, KNOWN_CRASH_SEEDS, PG_URL, startTestApp, withSeeds, type TestApp } from './support/harness';

/**
 * Two instances behind one PostgreSQL: both serve the API, exactly one runs the Crash engine (an
 * advisory-lock lease), and when it goes away the other takes the rounds over.
 */
describe('several instances on PostgreSQL', () => {
  const env = { CRASH_BETTING_WINDOW_MS: '800', CRASH_PAUSE_MS: '200', CRASH_TICK_MS: '50' };
  let a: TestApp;
  let b: TestApp;
  let aStopped = false;

  beforeAll(async () => {
    // Short rounds with known outcomes (1.18x, 1.26x) keep the hand-over quick and predictable.
    const seeds = Array.from({ length: 12 }, (_, i) => (i % 2 ? KNOWN_CRASH_SEEDS.x126 : KNOWN_CRASH_SEEDS.x118));
    a = await startTestApp({ store: 'postgres', env, beforeStart: withSeeds('crash', seeds) });
    b = await startTestApp({ replicaOf: a, env });
  });
  afterAll(async () => {
    if (!a?.schema) return;
    await b?.close();
    if (!aStopped) await a.app.stop();
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS ${a.schema} CASCADE`);
    await c.end();
  });

  it('runs the engine in exactly one instance and hands it over when that one stops', async () => {
    const leaders = () => [a, b].filter((x) => x.app.services.engines.crash.isLeader);
    await eventually(async () => leaders().length === 1);
    expect(leaders()).toHaveLength(1);
    const leader = leaders()[0]!;
    const follower = leader === a ? b : a;

    // A bet placed through the follower is settled by the leader's engine.
    const op = await a.createOperator();
    const viaFollower = client(follower.baseUrl, op);
    const placed = await eventually(async () => {
      const r = await viaFollower('POST', '/api/public/v1/place-bet', { external_user_id: 'x', amount: 50, auto_cashout: 1.01 }, { idempotencyKey: `f-${Date.now()}` });
      return r.status === 200 ? r.body : undefined;
    });
    await eventually(async () => (await viaFollower('GET', `/api/public/v1/bets/${placed.bet_id}`)).body.status !== 'active', 20_000);

    // The leader goes away; the follower takes the lease and keeps the rounds going.
    await leader.app.stop();
    if (leader === a) aStopped = true;
    await eventually(async () => follower.app.services.engines.crash.isLeader, 10_000);
    const before = (await viaFollower('GET', '/api/public/v1/rounds/current')).body.round_number;
    await eventually(async () => (await viaFollower('GET', '/api/public/v1/rounds/current')).body.round_number > before, 30_000);
    const after = await eventually(async () => {
      const r = await viaFollower('POST', '/api/public/v1/place-bet', { external_user_id: 'y', amount: 60, auto_cashout: 1.01 }, { idempotencyKey: `g-${Date.now()}` });
      return r.status === 200 ? r.body : undefined;
    });
    const settled = await eventually(async () => {
      const r = await viaFollower('GET', `/api/public/v1/bets/${after.bet_id}`);
      return r.body.status !== 'active' ? r.body : undefined;
    }, 20_000);
    expect(['cashed_out', 'lost']).toContain(settled.status);
    if (leader === b) {
      // Keep afterAll's bookkeeping simple: b was stopped here, so only a remains to close.
      b = a;
    }
  }, 60_000);
});
