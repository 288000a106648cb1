import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChildService } from '../support/child-service';
import { client, eventually, KNOWN_CRASH_SEEDS, PG_URL, withSeeds, longRoundSeeds } from '../support/harness';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The Crash engine's holder freezes (SIGSTOP) while a round runs and thaws after PostgreSQL has ended its
 * lease session. docs/architecture.md: "a holder that thaws finds its lease session gone, pays nothing (the
 * bets are void)"; docs/decisions.md: an auto cash-out the curve would have reached while nobody drove the
 * round is not a cash-out. Whoever takes the lease next (here the same process, once it has taken it
 * again) voids the round and refunds every stake. The timers the thawed process had queued (the next
 * tick, the round's end) must not pay or settle anything in the meantime.
 */
describe('a Crash lease holder frozen past its lease, then thawed', () => {
  // A 250 ms lease check: the server ends a silent holder's session after 750 ms.
  const env = {
    CRASH_BETTING_WINDOW_MS: '2500',
    CRASH_PAUSE_MS: '300',
    CRASH_TICK_MS: '50',
    ENGINE_LEASE_CHECK_MS: '250',
    STOCK_RACE_BETTING_WINDOW_MS: '60000',
  };
  const svc = new ChildService(env, { store: 'postgres' });
  let call: ReturnType<typeof client>;

  beforeAll(async () => {
    // Rounds 1–3 crash at 1.26x (3.85 s of climb), later ones climb past 100x.
    const short = [KNOWN_CRASH_SEEDS.x126, KNOWN_CRASH_SEEDS.x126, KNOWN_CRASH_SEEDS.x126];
    await svc.prepare(withSeeds('crash', [...short, ...longRoundSeeds(4)]));
    const created = await svc.admin('operator', 'create', '--name', 'frozen-holder');
    await svc.start();
    call = client(svc.baseUrl, { id: created.operator_id, apiKey: created.api_key, apiSecret: created.api_secret });
  }, 60_000);
  afterAll(async () => {
    svc.thaw();
    await svc.kill9();
    await svc.dispose();
  });

  /** Places bets in the first open round that `fits`, with time to spare; freezes the holder once it runs. */
  async function betThenFreezeAtStart(fits: (roundNumber: number) => boolean, autos: (number | null)[]) {
    const round = await eventually(
      async () => {
        const r = (await call('GET', '/api/public/v1/rounds/current')).body;
        return r?.status === 'open' && fits(r.round_number) && r.betting_closes_at - Date.now() >= 1_000
          ? r
          : undefined;
      },
      30_000,
      20,
    );
    const bets: { id: string; amount: number }[] = [];
    for (const [i, auto] of autos.entries()) {
      const amount = 1_000 + i;
      const body = { external_user_id: `p${i}`, amount, auto_cashout: auto };
      const r = await call('POST', '/api/public/v1/place-bet', body, {
        idempotencyKey: randomBytes(8).toString('hex'),
      });
      expect(r.status).toBe(200);
      expect(r.body.round_number).toBe(round.round_number);
      bets.push({ id: r.body.bet_id, amount });
    }
    const running = await eventually(
      async () => {
        const r = (await call('GET', `/api/public/v1/rounds/${round.round_number}`)).body;
        return r?.status === 'running' ? r : undefined;
      },
      10_000,
      5,
    );
    svc.freeze();
    const frozenAfterMs = Date.now() - running.running_at;
    return { round, bets, frozenAfterMs };
  }

  async function settled(id: string) {
    return eventually(
      async () => {
        const b = (await call('GET', `/api/public/v1/bets/${id}`)).body;
        return b && b.status !== 'active' ? b : undefined;
      },
      15_000,
      50,
    );
  }

  it.each([
    {
      name: 'settles nothing from its overdue round end',
      // 1.10x is reached 1.59 s into the climb, the crash (1.26x) 3.85 s in: both while the holder is frozen.
      fits: (n: number) => n <= 3,
      autos: [1.1, null],
      frozenMs: 5_000,
    },
    {
      name: 'pays no auto cash-out from its overdue tick',
      // The round climbs past 100x; 1.10x is reached 1.59 s in, while the holder is frozen.
      fits: (n: number) => n >= 4,
      autos: [1.1, 1.2],
      frozenMs: 3_500,
    },
  ])(
    '$name: the round is voided and every stake refunded',
    async ({ fits, autos, frozenMs }) => {
      const { round, bets, frozenAfterMs } = await betThenFreezeAtStart(fits, autos);
      expect(frozenAfterMs).toBeLessThan(1_400);
      await sleep(frozenMs);
      svc.thaw();
      for (const bet of bets) {
        expect(await settled(bet.id)).toMatchObject({ status: 'void', payout: bet.amount });
      }
      const r = (await call('GET', `/api/public/v1/rounds/${round.round_number}`)).body;
      expect(r.status).toBe('void');
    },
    40_000,
  );
});

/**
 * Two instances started at the same moment on an empty schema (docs/deployment.md): the migrations run
 * once, one instance takes each engine's lease, and each game gets one hash chain, played one round at a
 * time, with no round number twice.
 */
describe('two instances started together on an empty PostgreSQL schema', () => {
  const env = {
    CRASH_BETTING_WINDOW_MS: '600',
    CRASH_PAUSE_MS: '100',
    CRASH_TICK_MS: '50',
    STOCK_RACE_BETTING_WINDOW_MS: '600',
    STOCK_RACE_DURATION_MS: '200',
    STOCK_RACE_PAUSE_MS: '100',
    ENGINE_LEASE_CHECK_MS: '250',
  };
  const a = new ChildService(env, { store: 'postgres' });
  const b = new ChildService(env, { replicaOf: a });

  afterAll(async () => {
    await Promise.all([a.kill9(), b.kill9()]);
    await a.dispose();
  });

  it('migrates once, sets each game chain up once and numbers the rounds once', async () => {
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${a.schema}`);
    await admin.end();
    await Promise.all([a.start(), b.start()]);
    for (const svc of [a, b]) {
      await eventually(async () => {
        const r = await request(`${svc.baseUrl}/readyz`);
        await r.body.text();
        return r.statusCode === 200;
      }, 20_000);
    }
    // A few rounds of each game go by.
    await eventually(async () => {
      const rows = await a.rows<{ n: number }>(`SELECT COUNT(*)::int AS n FROM rounds WHERE status = 'closed'`);
      return rows[0]!.n >= 4;
    }, 30_000);
    const migrations = await a.rows<{ name: string }>('SELECT name FROM kysely_migration ORDER BY name');
    expect(new Set(migrations.map((m) => m.name)).size).toBe(migrations.length);
    const chains = await a.rows<{ game: string; n: number }>(
      'SELECT game, COUNT(*)::int AS n FROM fair_chain_records GROUP BY game ORDER BY game',
    );
    expect(chains).toEqual([
      { game: 'crash', n: 1 },
      { game: 'stock_race', n: 1 },
    ]);
    const rounds = await a.rows<{ game: string; round_number: number; chain_idx: number; status: string }>(
      'SELECT game, round_number, chain_idx, status FROM rounds ORDER BY game, round_number',
    );
    for (const game of ['crash', 'stock_race']) {
      const mine = rounds.filter((r) => r.game === game);
      expect(mine.map((r) => Number(r.round_number))).toEqual(mine.map((_, i) => i + 1));
      expect(mine.map((r) => Number(r.chain_idx))).toEqual(mine.map((_, i) => i));
      expect(mine.filter((r) => r.status === 'open' || r.status === 'running').length).toBeLessThanOrEqual(1);
    }
  }, 60_000);
});
