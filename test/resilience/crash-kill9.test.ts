import BetterSqlite3 from 'better-sqlite3';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChildService } from '../support/child-service';
import { client, eventually, longRoundSeeds, STORES, withSeeds, type TestOperator } from '../support/harness';
import { createOperator, seedsBusting } from '../support/kill9';

interface BetRow {
  id: string;
  status: string;
  amount: number;
  payout: number | null;
  round_number: number;
}

/**
 * The real service is killed with SIGKILL while bets are in flight, then started again on the same
 * data directory. Every bet it acknowledged must still exist and end settled exactly once.
 */
describe('Crash survives kill -9', () => {
  // A betting window long enough that a loaded machine still finds the round open.
  const svc = new ChildService({ CRASH_BETTING_WINDOW_MS: '6000', CRASH_PAUSE_MS: '300', CRASH_TICK_MS: '50' });
  let op: TestOperator;
  let call: ReturnType<typeof client>;

  beforeAll(async () => {
    // Rounds that run 7 to 18 s (1.5x to 3x): long enough to be caught running, short enough that the
    // next open round is never a minute away (a random chain's 50x round kept the second test waiting).
    await svc.prepare(withSeeds('crash', seedsBusting(150, 300, 12)));
    await svc.start();
    op = await createOperator(svc, 'kill9');
    call = client(svc.baseUrl, op);
  }, 60_000);
  afterAll(async () => svc.stop());

  const readBets = (): BetRow[] => {
    const db = new BetterSqlite3(join(svc.dataDir, 'service.db'), { readonly: true });
    try {
      return db.prepare('SELECT id, status, amount, payout, round_number FROM bets').all() as BetRow[];
    } finally {
      db.close();
    }
  };
  const settledEvents = (): Map<string, number> => {
    const db = new BetterSqlite3(join(svc.dataDir, 'service.db'), { readonly: true });
    try {
      const counts = new Map<string, number>();
      for (const row of db.prepare(`SELECT data FROM events WHERE type = 'bet.settled'`).all() as { data: string }[]) {
        const id = JSON.parse(row.data).bet_id as string;
        counts.set(id, (counts.get(id) ?? 0) + 1);
      }
      return counts;
    } finally {
      db.close();
    }
  };

  const currentStatus = async (): Promise<
    { status: string; round_number: number; betting_closes_at: number } | undefined
  > => (await call('GET', '/api/public/v1/rounds/current')).body;
  // A round found open in its last moment would refuse the bets that follow: wait for one with at
  // least half of its 6 s window left (service and test share the machine's clock).
  const freshlyOpenRound = () =>
    eventually(async () => {
      const r = await currentStatus();
      return r?.status === 'open' && r.betting_closes_at - Date.now() >= 3_000 ? r : undefined;
    }, 90_000);

  it('keeps every acknowledged bet when killed in the betting window mid-burst, and settles each once', async () => {
    const round = await freshlyOpenRound();
    const acknowledged = new Map<string, number>();
    const requestOf = new Map<string, { i: number; body: Record<string, unknown> }>();
    let killed = false;
    const burst = Array.from({ length: 120 }, async (_, i) => {
      try {
        // Every bet leaves by 1.50x at the latest, so the round settles them all within seconds.
        const body = { external_user_id: `p${i % 7}`, amount: 100 + i, auto_cashout: 1.01 + (i % 50) / 100 };
        const r = await call('POST', '/api/public/v1/place-bet', body, { idempotencyKey: `burst-${i}` });
        if (r.status === 200) {
          acknowledged.set(r.body.bet_id, 100 + i);
          requestOf.set(r.body.bet_id, { i, body });
        }
      } catch {
        // the connection died with the process: not acknowledged, may or may not exist
      }
    });
    // Kill once some, but not all, bets have been answered.
    await eventually(async () => acknowledged.size >= 20, 10_000, 1);
    await svc.kill9();
    killed = true;
    await Promise.all(burst);
    expect(killed).toBe(true);
    expect(acknowledged.size).toBeGreaterThanOrEqual(20);

    const afterCrash = new Map(readBets().map((b) => [b.id, b]));
    for (const [id, amount] of acknowledged) expect(afterCrash.get(id)?.amount).toBe(amount);

    await svc.start();
    // The resumed round runs and closes; every bet in it ends settled.
    await eventually(
      async () =>
        readBets()
          .filter((b) => b.round_number === round.round_number)
          .every((b) => !['active'].includes(b.status)),
      60_000,
      200,
    );
    const settled = settledEvents();
    for (const b of readBets().filter((x) => x.round_number === round.round_number)) {
      expect(['cashed_out', 'lost', 'void']).toContain(b.status);
      expect(settled.get(b.id)).toBe(1);
      if (b.status === 'void') expect(b.payout).toBe(b.amount);
      if (b.status === 'lost') expect(b.payout).toBe(0);
    }
    // Retrying an acknowledged bet after the restart replays it; it does not place another.
    const [someId, req] = [...requestOf.entries()][0]!;
    const replay = await call('POST', '/api/public/v1/place-bet', req.body, { idempotencyKey: `burst-${req.i}` });
    expect(replay.status).toBe(200);
    expect(replay.headers['idempotent-replay']).toBe('true');
    expect(replay.body.bet_id).toBe(someId);
    expect(readBets().filter((b) => b.round_number === round.round_number)).toHaveLength(afterCrash.size);
  }, 200_000);

  it('voids a round killed while running, refunding each open bet exactly once', async () => {
    const round = await freshlyOpenRound();
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const r = await call(
        'POST',
        '/api/public/v1/place-bet',
        { external_user_id: `q${i}`, amount: 1_000 + i },
        { idempotencyKey: `run-${i}` },
      );
      expect(r.status).toBe(200);
      ids.push(r.body.bet_id);
    }
    await eventually(async () => (await currentStatus())?.status === 'running', 20_000, 20);
    await svc.kill9();
    const before = readBets().filter((b) => ids.includes(b.id));
    expect(before).toHaveLength(10);

    await svc.start();
    await eventually(
      async () =>
        readBets()
          .filter((b) => ids.includes(b.id))
          .every((b) => b.status !== 'active'),
      30_000,
      100,
    );
    const after = readBets().filter((b) => ids.includes(b.id));
    const settled = settledEvents();
    for (const b of after) {
      // A bet the crash closed before the kill stays lost; otherwise the restart voided the round.
      expect(['void', 'lost']).toContain(b.status);
      expect(b.payout).toBe(b.status === 'void' ? b.amount : 0);
      expect(settled.get(b.id)).toBe(1);
    }
    const r = await call('GET', `/api/public/v1/rounds/${round.round_number}`);
    expect(['void', 'closed']).toContain(r.body.status);
    if (r.body.status === 'void') expect(r.body.void_reason).toMatch(/restarted/);
  }, 200_000);
});

/**
 * The restart rule, as an operator lives it: the service dies (SIGKILL) while a Crash round runs, and
 * its players press "cash out" the instant it is reachable again. The multiplier the stored start
 * time implies has kept climbing through the outage, but nothing drove the round: not one of those
 * cash-outs is paid, and every open bet (auto cash-outs the outage "passed" included) is refunded,
 * with exactly one bet.settled each.
 */
describe.each(STORES)('kill -9 while a Crash round runs, cash-outs at restart, on %s', (store) => {
  const env = { CRASH_BETTING_WINDOW_MS: '8000', CRASH_PAUSE_MS: '300', CRASH_TICK_MS: '50' };
  const svc = new ChildService(env, { store });
  let call: ReturnType<typeof client>;

  beforeAll(async () => {
    await svc.prepare(withSeeds('crash', longRoundSeeds(3)));
    // The operator exists before the first round opens, so that round's whole window is left for bets.
    const op = await createOperator(svc, `restart-${store}`);
    await svc.start();
    call = client(svc.baseUrl, op);
  }, 90_000);
  afterAll(async () => {
    await svc.stop();
    await svc.dispose();
  });

  it('pays none of them and refunds every open bet exactly once', async () => {
    const round = await eventually(async () => {
      const r = (await call('GET', '/api/public/v1/rounds/current')).body;
      return r?.status === 'open' && r.betting_closes_at - Date.now() >= 2_000 ? r : undefined;
    }, 60_000);
    const stakes = new Map<string, number>();
    // Half wait for a manual cash-out; half have an auto cash-out the curve reaches only during the outage.
    const autoTargets = [null, null, null, 1.3, 1.5, 2];
    for (const [i, auto] of autoTargets.entries()) {
      const body = { external_user_id: `r${i}`, amount: 1_000 + i, auto_cashout: auto };
      const r = await call('POST', '/api/public/v1/place-bet', body, { idempotencyKey: `restart-${i}` });
      expect(r.status).toBe(200);
      stakes.set(r.body.bet_id, 1_000 + i);
    }
    const running = async () => (await call('GET', '/api/public/v1/rounds/current')).body?.status === 'running';
    await eventually(running, 30_000, 10);
    await svc.kill9();
    const atKill = await svc.rows<{ id: string; status: string }>(`SELECT id, status FROM bets`);
    expect(atKill.filter((b) => stakes.has(b.id)).map((b) => b.status)).toEqual([...stakes.keys()].map(() => 'active'));
    // The outage lasts a few seconds: long enough for the wall-clock multiplier to pass the auto targets.
    await new Promise((r) => setTimeout(r, 3_000));

    await svc.start({ until: 'port' });
    const cashouts = await Promise.all(
      [...stakes.keys()].map((betId, i) =>
        call('POST', '/api/public/v1/cashout', { bet_id: betId }, { idempotencyKey: `at-restart-${i}` }),
      ),
    );
    expect(cashouts.filter((r) => r.status === 200).map((r) => r.body)).toEqual([]);
    for (const r of cashouts) {
      expect(r.status).toBe(409);
      expect(['BET_NOT_ACTIVE', 'ROUND_INTERRUPTED']).toContain(r.body.code);
    }

    // What the operator reads afterwards: each bet void with its stake back, and one bet.settled each.
    for (const [betId, stake] of stakes) {
      const bet = await eventually(async () => {
        const r = await call('GET', `/api/public/v1/bets/${betId}`);
        return r.status === 200 && r.body.status !== 'active' ? r.body : undefined;
      }, 30_000);
      expect(bet).toMatchObject({ status: 'void', payout: stake, multiplier: null, cashout_kind: null });
    }
    const settled = await svc.rows<{ data: string }>(`SELECT data FROM events WHERE type = 'bet.settled'`);
    const payloads = settled.map((e) => JSON.parse(e.data)).filter((d) => stakes.has(d.bet_id));
    expect(payloads.map((d) => d.bet_id).sort()).toEqual([...stakes.keys()].sort());
    for (const d of payloads) {
      expect(d).toMatchObject({ status: 'void', amount: stakes.get(d.bet_id), payout: stakes.get(d.bet_id) });
    }
    const after = (await call('GET', `/api/public/v1/rounds/${round.round_number}`)).body;
    expect(after).toMatchObject({ status: 'void', void_reason: expect.stringMatching(/restarted/) });
  }, 200_000);
});
