import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChildService } from '../support/child-service';
import {
  client,
  eventually,
  KNOWN_CRASH_SEEDS,
  PG_URL,
  startTestApp,
  withSeeds,
  type TestApp,
  shortCrashSeeds,
  longRoundSeeds,
} from '../support/harness';

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
    const seeds = shortCrashSeeds(12);
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
      const r = await viaFollower(
        'POST',
        '/api/public/v1/place-bet',
        { external_user_id: 'x', amount: 50, auto_cashout: 1.01 },
        { idempotencyKey: `f-${Date.now()}` },
      );
      return r.status === 200 ? r.body : undefined;
    });
    await eventually(
      async () => (await viaFollower('GET', `/api/public/v1/bets/${placed.bet_id}`)).body.status !== 'active',
      20_000,
    );

    // The leader goes away; the follower takes the lease and keeps the rounds going.
    await leader.app.stop();
    if (leader === a) aStopped = true;
    await eventually(async () => follower.app.services.engines.crash.isLeader, 10_000);
    const before = (await viaFollower('GET', '/api/public/v1/rounds/current')).body.round_number;
    await eventually(
      async () => (await viaFollower('GET', '/api/public/v1/rounds/current')).body.round_number > before,
      30_000,
    );
    const after = await eventually(async () => {
      const r = await viaFollower(
        'POST',
        '/api/public/v1/place-bet',
        { external_user_id: 'y', amount: 60, auto_cashout: 1.01 },
        { idempotencyKey: `g-${Date.now()}` },
      );
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

/**
 * Two service processes on one PostgreSQL schema. The one running the Crash engine freezes mid-round
 * (SIGSTOP: a hung host keeps its sockets, so PostgreSQL sees nothing close). Cash-outs then reach the
 * other instance: none may be paid for a round nobody drives, the survivor takes the lease within the
 * default bound, voids the round and refunds every open bet once, and the old leader, thawed, stands
 * down instead of running a second engine.
 */
describe('a leader frozen mid-round, two processes on PostgreSQL', () => {
  const env = { CRASH_BETTING_WINDOW_MS: '8000', CRASH_PAUSE_MS: '300', CRASH_TICK_MS: '50' };
  const leader = new ChildService(env, { store: 'postgres' });
  const survivor = new ChildService(env, { replicaOf: leader });
  let call: ReturnType<typeof client>;

  beforeAll(async () => {
    // Round 1 is short (1.18x): its betting window passes while the second process starts. Round 2
    // and later run for over a minute.
    await leader.prepare(withSeeds('crash', [KNOWN_CRASH_SEEDS.x118, ...longRoundSeeds(3)]));
    const created = await leader.admin('operator', 'create', '--name', 'failover');
    // The first instance up takes the engine lease before it listens; the second finds it held.
    await leader.start();
    await survivor.start();
    const op = { id: created.operator_id, apiKey: created.api_key, apiSecret: created.api_secret };
    call = client(survivor.baseUrl, op);
  }, 120_000);
  afterAll(async () => {
    await leader.kill9();
    await survivor.stop();
    await leader.dispose();
  });

  it('pays no cash-out at the survivor once the engine is gone, and the survivor voids and refunds once', async () => {
    const round = await eventually(async () => {
      const r = (await call('GET', '/api/public/v1/rounds/current')).body;
      return r?.status === 'open' && r.round_number >= 2 && r.betting_closes_at - Date.now() >= 2_000 ? r : undefined;
    }, 60_000);
    const stakes = new Map<string, number>();
    for (const [i, auto] of [null, null, null, 1.3, 1.5].entries()) {
      const body = { external_user_id: `f${i}`, amount: 2_000 + i, auto_cashout: auto };
      const r = await call('POST', '/api/public/v1/place-bet', body, { idempotencyKey: `failover-${i}` });
      expect(r.status).toBe(200);
      stakes.set(r.body.bet_id, 2_000 + i);
    }
    const [liveBet, ...openBets] = [...stakes.keys()];
    const running = async () => (await call('GET', '/api/public/v1/rounds/current')).body?.status === 'running';
    await eventually(running, 30_000, 10);

    // While the leader drives the round, the survivor (not the leader) pays a cash-out as usual.
    const live = await call('POST', '/api/public/v1/cashout', { bet_id: liveBet }, { idempotencyKey: 'live' });
    expect(live.status).toBe(200);
    expect(live.body.payout).toBeGreaterThanOrEqual(stakes.get(liveBet!)!);

    leader.freeze();
    const frozenAt = Date.now();
    // Past the default staleness bound (1 s at a 50 ms tick), with room for a loaded machine.
    await new Promise((r) => setTimeout(r, 1_500));
    const refused = await Promise.all(
      openBets.map((betId, i) =>
        call('POST', '/api/public/v1/cashout', { bet_id: betId }, { idempotencyKey: `late-${i}` }),
      ),
    );
    expect(refused.filter((r) => r.status === 200).map((r) => r.body)).toEqual([]);
    for (const r of refused) {
      expect(r.status).toBe(409);
      expect(['ROUND_INTERRUPTED', 'BET_NOT_ACTIVE']).toContain(r.body.code);
    }

    // The survivor takes the lease (the frozen holder's session is ended by the server) and voids the
    // round: within the default bound of about 4 s, plus room for a loaded machine.
    const voided = await eventually(
      async () => {
        const r = (await call('GET', `/api/public/v1/rounds/${round.round_number}`)).body;
        return r?.status === 'void' ? r : undefined;
      },
      20_000,
      50,
    );
    const takeoverMs = Date.now() - frozenAt;
    expect(voided.void_reason).toMatch(/restarted/);
    expect(takeoverMs).toBeLessThan(8_000);

    // Still frozen or not, the retries of those cash-outs now see what the operator sees: refunded.
    for (const betId of openBets) {
      const bet = (await call('GET', `/api/public/v1/bets/${betId}`)).body;
      expect(bet).toMatchObject({ status: 'void', payout: stakes.get(betId) });
    }
    const cashed = (await call('GET', `/api/public/v1/bets/${liveBet}`)).body;
    expect(cashed).toMatchObject({ status: 'cashed_out', payout: live.body.payout });

    // The old leader thaws: its queued ticks find nothing to pay, and it stands down.
    leader.thaw();
    const next = await eventually(async () => {
      const r = (await call('GET', '/api/public/v1/rounds/current')).body;
      return r?.round_number > round.round_number ? r : undefined;
    }, 20_000);
    await new Promise((r) => setTimeout(r, 3_000));
    const crashRounds = await survivor.rows<{ round_number: number; status: string }>(
      `SELECT round_number, status FROM rounds WHERE game = 'crash' ORDER BY round_number`,
    );
    expect(crashRounds.filter((r) => r.status === 'open' || r.status === 'running')).toHaveLength(1);
    const numbers = crashRounds.map((r) => Number(r.round_number));
    expect(numbers).toEqual(numbers.map((_, i) => i + 1));
    expect(numbers.at(-1)).toBeGreaterThanOrEqual(next.round_number);

    // One bet.settled per bet, whichever process wrote it.
    const settled = await survivor.rows<{ data: string }>(`SELECT data FROM events WHERE type = 'bet.settled'`);
    const payloads = settled.map((e) => JSON.parse(e.data)).filter((d) => stakes.has(d.bet_id));
    expect(payloads.map((d) => d.bet_id).sort()).toEqual([...stakes.keys()].sort());
    for (const d of payloads) {
      const cashedOut = { status: 'cashed_out', payout: live.body.payout };
      expect(d).toMatchObject(d.bet_id === liveBet ? cashedOut : { status: 'void', payout: stakes.get(d.bet_id) });
    }
  }, 200_000);
});
