import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { aroundPrepared, eventually, freshDatabase, STORES } from '../../../test/support/harness';
import { CallHold, type PreparedCall, PreparedCalls } from '../../../test/support/prepared-calls';
import type { Bet, CashedOutCrashBet } from '../../bets/bet';
import { betSettledEvent } from '../../bets/bet-events';
import { BetCommands } from '../../bets/bet-commands';
import type { KeyClaim } from '../../idempotency/idempotency-repository';
import type { Database, SqlParam } from '../../store/database';
import { operatorEventRow } from '../../webhooks/event-rows';
import type { Round } from '../engine/round';
import { roundRepository } from '../engine/round-repository';
import { type CashoutPlan, CrashCommands } from './crash-bet-commands';

/**
 * The cash-out command unit on each store (SQLite: read, decide and write in one synchronous unit;
 * PostgreSQL: one read, then rbs_cash_out of migration 007): what it writes, what it answers for a
 * key already used, and that a bet or round that changed after the read leaves it to the full path.
 * On PostgreSQL, also how cash-outs share calls: reads and writes are two stages, and the read of
 * the next cash-outs runs while a write is in flight.
 */
describe.each(STORES)('cash-out command unit on %s', (kind) => {
  let db: Database;
  let commands: CrashCommands;
  let dispose: () => Promise<void>;
  const now = 2_000_000;
  let round: Round;

  beforeEach(async () => {
    const fresh = await freshDatabase(kind);
    db = fresh.db;
    commands = new CrashCommands(db, new BetCommands(db));
    dispose = fresh.dispose;
    await db.transaction(async (tx) => {
      await tx.run(
        `INSERT INTO operators (id, name, api_key, secret_enc, status, settings, created_at, updated_at)
         VALUES ('op', 'n', 'k', 'x', 'active', '{}', 1, 1)`,
      );
      // Subscribed to bet.settled (gets a delivery), and one that is not (gets none).
      for (const [id, events] of [
        ['we_1', '["bet.settled"]'],
        ['we_2', '["round.opened"]'],
      ]) {
        await tx.run(
          `INSERT INTO webhook_endpoints (id, operator_id, url, surface, events, enabled, secret_enc,
             created_at, updated_at)
           VALUES (?, 'op', 'https://example.test/h', 'A', ?, 1, 'x', 1, 1)`,
          [id!, events!],
        );
      }
    });
    round = await db.transaction(async (tx) => {
      const r = await roundRepository.insert(tx, {
        game: 'crash',
        seedHash: 'h',
        seed: 's',
        chainId: 'c',
        chainIdx: 1,
        openedAt: now - 10_000,
        bettingClosesAt: now - 5_000,
        settings: {},
      });
      await roundRepository.transition(tx, r, 'running', {
        running_at: now - 4_000,
        ends_at: now + 60_000,
        heartbeat_at: now - 100,
      });
      await tx.run(
        `INSERT INTO bets (id, operator_id, game, round_id, round_number, player, amount, status, placed_at)
         VALUES ('bet_1', 'op', 'crash', ?, 1, 'alice', 100, 'active', ?)`,
        [r.id, now - 6_000],
      );
      const running = await roundRepository.byId(tx, r.id);
      if (!running) throw new Error('the round just written is missing');
      return running;
    });
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    await dispose();
  });

  const claim = (key: string): KeyClaim => ({
    operatorId: 'op',
    key,
    requestHash: `hash-${key}`,
    signature: null,
    now,
  });
  // The bet.settled event of the cash-out the plan decides: bet_1 cashed out at 1.50x.
  const cashedOut = (bet: Bet): CashedOutCrashBet => ({
    id: bet.id,
    operatorId: 'op',
    game: 'crash',
    roundId: round.id,
    roundNumber: 1,
    player: 'alice',
    sessionId: null,
    currency: null,
    selections: null,
    autoCashout: null,
    amount: 100,
    placedAt: now - 6_000,
    status: 'cashed_out',
    potentialPayout: null,
    payout: 150,
    cashoutMultiplier: 150,
    cashoutKind: 'manual',
    settledAt: now,
  });
  const settlePlan = (bet: Bet): CashoutPlan => ({
    settle: { payout: 150, multiplier: 150, kind: 'manual' },
    response: { statusCode: 200, response: '{"bet_id":"bet_1","payout":150,"multiplier":"1.50"}' },
    aliveSince: now - 1_000,
    event: operatorEventRow(betSettledEvent(cashedOut(bet)), now, true),
    timing: null,
  });
  const count = async (sql: string): Promise<number> => Number((await db.get<{ n: number }>(sql))!.n);

  it('settles the bet, stores the response and writes the event with its deliveries, in one unit', async () => {
    const seen: { bet?: Bet; round?: Round } = {};
    const answer = await commands.cashout(claim('k1'), 'bet_1', (bet, r) => {
      Object.assign(seen, { bet, round: r });
      return settlePlan(bet!);
    });
    expect(answer).toEqual({ outcome: 'settled' });
    expect(seen.bet).toMatchObject({ id: 'bet_1', status: 'active', amount: 100 });
    expect(seen.round).toMatchObject({ id: round.id, status: 'running', heartbeatAt: now - 100 });
    const bet = await db.get<{ status: string; payout: number; cashout_kind: string }>(
      "SELECT * FROM bets WHERE id = 'bet_1'",
    );
    expect({ ...bet, payout: Number(bet!.payout) }).toMatchObject({
      status: 'cashed_out',
      payout: 150,
      cashout_kind: 'manual',
    });
    expect(await count("SELECT COUNT(*) AS n FROM events WHERE type = 'bet.settled' AND operator_id = 'op'")).toBe(1);
    expect(await db.all('SELECT endpoint_id FROM webhook_deliveries')).toEqual([{ endpoint_id: 'we_1' }]);

    // The same key again: the stored row comes back for the caller to replay; nothing more is written.
    const again = await commands.cashout(claim('k1'), 'bet_1', () => ({
      refusal: { statusCode: 409, response: '{"x":1}' },
    }));
    expect(again).toMatchObject({
      outcome: 'existing',
      request_hash: 'hash-k1',
      response: '{"bet_id":"bet_1","payout":150,"multiplier":"1.50"}',
    });
    expect(await count('SELECT COUNT(*) AS n FROM events')).toBe(1);
  });

  it('stores a refusal under its key and writes nothing else', async () => {
    const answer = await commands.cashout(claim('k2'), 'bet_404', (bet) => {
      expect(bet).toBeUndefined();
      return { refusal: { statusCode: 404, response: '{"code":"BET_NOT_FOUND"}' } };
    });
    expect(answer).toEqual({ outcome: 'refused' });
    expect(await count("SELECT COUNT(*) AS n FROM idempotency_keys WHERE idem_key = 'k2' AND status_code = 404")).toBe(
      1,
    );
    expect(await count('SELECT COUNT(*) AS n FROM events')).toBe(0);
  });

  it('leaves the machine-timing rule to the full path when the unit finds a streak', async () => {
    // An earlier manual cash-out of alice 4 005 ms into a round; this one comes 4 000 ms in.
    await db.transaction((tx) =>
      tx.run(
        `INSERT INTO bets (id, operator_id, game, round_id, round_number, player, amount, status, payout,
           cashout_multiplier, cashout_kind, placed_at, settled_at)
         VALUES ('bet_0', 'op', 'crash', ?, 1, 'alice', 100, 'cashed_out', 120, 120, 'manual', ?, ?)`,
        [round.id, now - 7_000, now - 4_000 + 4_005],
      ),
    );
    const timing = (windowMs: number) => ({
      streak: 2,
      windowMs,
      since: 0,
      // SQLite hands the rows to the rule; PostgreSQL applies the same rule in SQL.
      decide: (recent: { settled_at: number | null; running_at: number | null }[]) => {
        const elapsed = recent.map((r) => Number(r.settled_at) - Number(r.running_at));
        return elapsed.length >= 2 && Math.max(...elapsed) - Math.min(...elapsed) <= windowMs;
      },
    });
    const plan = (bet: Bet, windowMs: number) => ({
      ...(settlePlan(bet) as Extract<CashoutPlan, { settle: unknown }>),
      timing: timing(windowMs),
    });
    expect(await commands.cashout(claim('k3'), 'bet_1', (bet) => plan(bet!, 10))).toEqual({ outcome: 'full_path' });
    expect(await count("SELECT COUNT(*) AS n FROM bets WHERE status = 'active'")).toBe(1);
    expect(await count('SELECT COUNT(*) AS n FROM idempotency_keys')).toBe(0);
    // Five milliseconds apart is no streak within a 4 ms window.
    expect(await commands.cashout(claim('k3'), 'bet_1', (bet) => plan(bet!, 4))).toEqual({ outcome: 'settled' });
  });

  it.runIf(kind === 'postgres')('leaves a bet settled between its read and the unit to the full path', async () => {
    await db.transaction((tx) =>
      tx.run("UPDATE bets SET status = 'lost', payout = 0, settled_at = 1 WHERE id = 'bet_1'"),
    );
    // The decision was made on the row as it was read before (active).
    const answer = await commands.cashout(claim('k4'), 'bet_1', (bet) => settlePlan(bet!));
    expect(answer).toEqual({ outcome: 'full_path' });
    expect(await count('SELECT COUNT(*) AS n FROM idempotency_keys')).toBe(0);
    expect(await count('SELECT COUNT(*) AS n FROM events')).toBe(0);
  });

  it.runIf(kind === 'postgres')('leaves a round whose engine fell silent after the read to the full path', async () => {
    const answer = await commands.cashout(
      claim('k5'),
      'bet_1',
      (bet) => ({ ...(settlePlan(bet!) as object), aliveSince: now }) as CashoutPlan,
    );
    expect(answer).toEqual({ outcome: 'full_path' });
    expect(await count("SELECT COUNT(*) AS n FROM bets WHERE status = 'active'")).toBe(1);
  });
  /** Active bets of alice's round, one per player, `amount` 100 + i: the ids. */
  const insertBets = async (prefix: string, n: number): Promise<string[]> => {
    const ids = Array.from({ length: n }, (_, i) => `${prefix}${i}`);
    await db.transaction(async (tx) => {
      for (const [i, id] of ids.entries()) {
        await tx.run(
          `INSERT INTO bets (id, operator_id, game, round_id, round_number, player, amount, status, placed_at)
           VALUES (?, 'op', 'crash', ?, 1, ?, ?, 'active', ?)`,
          [id, round.id, `player-${id}`, 100 + i, now - 6_000],
        );
      }
    });
    return ids;
  };
  // As the service decides: a bet no longer active is refused (stored under the key); an active one
  // is settled at 1.37x, its payout rounded down to the unit.
  const decideAt137 = (bet: Bet | undefined): CashoutPlan => {
    if (!bet || bet.status !== 'active') return { refusal: { statusCode: 409, response: '{"code":"BET_NOT_ACTIVE"}' } };
    const payout = Math.floor((bet.amount * 137) / 100);
    const settled: CashedOutCrashBet = {
      ...cashedOut(bet),
      player: bet.player,
      amount: bet.amount,
      payout,
      cashoutMultiplier: 137,
    };
    return {
      settle: { payout, multiplier: 137, kind: 'manual' },
      response: { statusCode: 200, response: JSON.stringify({ bet_id: bet.id, payout, multiplier: '1.37' }) },
      aliveSince: now - 1_000,
      event: operatorEventRow(betSettledEvent(settled), now, true),
      timing: null,
    };
  };
  /** The statements the PostgreSQL store ran, by prepared-statement name, with their parameters. */
  const recordStatements = (): PreparedCall[] => new PreparedCalls(db).calls;
  /** The keys each rbs_cash_outs call carried, call by call. */
  const keysPerCall = (calls: PreparedCall[]): string[][] =>
    calls
      .filter((c) => c.name === 'rbs_cash_outs')
      .map((c) => (JSON.parse(String(c.params[0])) as SqlParam[][]).map((args) => String(args[1])));

  it.runIf(kind === 'postgres')(
    'settles many concurrent cash-outs of one round in shared calls, each with its payout, key and event',
    async () => {
      const calls = recordStatements();
      const ids = await insertBets('bet_c', 30);
      const answers = await Promise.all(ids.map((id) => commands.cashout(claim(`key-${id}`), id, decideAt137)));
      expect(answers).toEqual(ids.map(() => ({ outcome: 'settled' })));
      // The first went out alone; the rest queued behind it and shared calls (one commit each).
      expect(calls.filter((c) => c.name === 'rbs_cash_out')).toHaveLength(1);
      expect(keysPerCall(calls).flat()).toHaveLength(29);
      expect(calls.filter((c) => c.name === 'rbs_bets_and_rounds').length).toBe(keysPerCall(calls).length);

      const bets = await db.all<{ id: string; amount: number; payout: number; status: string; multiplier: number }>(
        'SELECT id, amount, payout, status, cashout_multiplier AS multiplier FROM bets ' +
          "WHERE id LIKE 'bet_c%' ORDER BY id",
      );
      expect(bets).toHaveLength(30);
      for (const b of bets) {
        expect({ status: b.status, payout: Number(b.payout), multiplier: Number(b.multiplier) }).toEqual({
          status: 'cashed_out',
          payout: Math.floor((Number(b.amount) * 137) / 100),
          multiplier: 137,
        });
      }
      const keys = await db.all<{ idem_key: string; status_code: number; response: string }>(
        "SELECT idem_key, status_code, response FROM idempotency_keys WHERE idem_key LIKE 'key-bet_c%'",
      );
      expect(keys).toHaveLength(30);
      for (const k of keys) {
        const betId = k.idem_key.slice('key-'.length);
        const amount = 100 + Number(betId.slice('bet_c'.length));
        expect(Number(k.status_code)).toBe(200);
        expect(JSON.parse(k.response)).toEqual({
          bet_id: betId,
          payout: Math.floor((amount * 137) / 100),
          multiplier: '1.37',
        });
      }
      const events = await db.all<{ data: string }>("SELECT data FROM events WHERE type = 'bet.settled'");
      expect(events.map((e) => JSON.parse(e.data).bet_id).sort()).toEqual([...ids].sort());
      expect(await count("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE endpoint_id = 'we_1'")).toBe(30);
      expect(await count('SELECT COUNT(*) AS n FROM webhook_deliveries')).toBe(30);

      // A key used in a call of several replays what that call stored.
      const replay = await commands.cashout(claim('key-bet_c7'), 'bet_c7', decideAt137);
      expect(replay).toEqual({
        outcome: 'existing',
        request_hash: 'hash-key-bet_c7',
        status_code: 200,
        response: JSON.stringify({ bet_id: 'bet_c7', payout: Math.floor((107 * 137) / 100), multiplier: '1.37' }),
      });
      expect(await count("SELECT COUNT(*) AS n FROM events WHERE type = 'bet.settled'")).toBe(30);
    },
  );

  it.runIf(kind === 'postgres')('runs two cash-outs of one bet in one call as one after the other', async () => {
    const calls = recordStatements();
    const [dup] = await insertBets('bet_d', 1);
    // bet_1 goes out alone; both cash-outs of bet_d0 queue behind it and share the next call.
    const [first, a, b] = await Promise.all([
      commands.cashout(claim('k-1'), 'bet_1', decideAt137),
      commands.cashout(claim('dup-a'), dup!, decideAt137),
      commands.cashout(claim('dup-b'), dup!, decideAt137),
    ]);
    expect(keysPerCall(calls)).toEqual([['dup-a', 'dup-b']]);
    expect(first).toEqual({ outcome: 'settled' });
    expect(a).toEqual({ outcome: 'settled' });
    // The second found the bet cashed out: it wrote nothing and leaves the answer to the full path.
    expect(b).toEqual({ outcome: 'full_path' });
    expect(await db.get("SELECT status, payout FROM bets WHERE id = 'bet_d0'")).toMatchObject({
      status: 'cashed_out',
    });
    expect(Number((await db.get<{ payout: number }>("SELECT payout FROM bets WHERE id = 'bet_d0'"))!.payout)).toBe(
      Math.floor((100 * 137) / 100),
    );
    expect(await count("SELECT COUNT(*) AS n FROM idempotency_keys WHERE idem_key = 'dup-b'")).toBe(0);
    expect(await count("SELECT COUNT(*) AS n FROM events WHERE data LIKE '%bet_d0%'")).toBe(1);
    // Sent alone after the first, dup-b is refused as not active, the answer the full path also gives.
    expect(await commands.cashout(claim('dup-b'), dup!, decideAt137)).toEqual({ outcome: 'refused' });
    expect(await db.get("SELECT status_code, response FROM idempotency_keys WHERE idem_key = 'dup-b'")).toEqual({
      status_code: 409,
      response: '{"code":"BET_NOT_ACTIVE"}',
    });
  });

  it.runIf(kind === 'postgres')(
    'leaves one cash-out of a call to the full path, or to its error, while the others still commit',
    async () => {
      const calls = recordStatements();
      const ids = await insertBets('bet_m', 5);
      // Engine silent since the read for bet_m1: rbs_cash_out claims its key and settles the bet, then
      // raises RB001 on the round; its block rolls back alone.
      const silentRound = (bet: Bet | undefined): CashoutPlan => ({
        ...(decideAt137(bet) as Extract<CashoutPlan, { settle: unknown }>),
        aliveSince: now,
      });
      const boom = new Error('decide failed');
      const answers = await Promise.allSettled([
        commands.cashout(claim('m-first'), 'bet_1', decideAt137),
        commands.cashout(claim('m0'), ids[0]!, decideAt137),
        commands.cashout(claim('m1'), ids[1]!, silentRound),
        commands.cashout(claim('m2'), ids[2]!, () => ({ fullPath: 'large payout' })),
        commands.cashout(claim('m3'), 'bet_404', decideAt137),
        commands.cashout(claim('m4'), ids[3]!, () => {
          throw boom;
        }),
        commands.cashout(claim('m5'), ids[4]!, decideAt137),
      ]);
      expect(answers).toEqual([
        { status: 'fulfilled', value: { outcome: 'settled' } },
        { status: 'fulfilled', value: { outcome: 'settled' } },
        { status: 'fulfilled', value: { outcome: 'full_path' } },
        { status: 'fulfilled', value: { outcome: 'full_path' } },
        { status: 'fulfilled', value: { outcome: 'refused' } },
        { status: 'rejected', reason: boom },
        { status: 'fulfilled', value: { outcome: 'settled' } },
      ]);
      // One call for the six queued: those with something to write, in order.
      expect(keysPerCall(calls)).toEqual([['m0', 'm1', 'm3', 'm5']]);
      const statuses = await db.all<{ id: string; status: string }>(
        "SELECT id, status FROM bets WHERE id LIKE 'bet_m%' ORDER BY id",
      );
      expect(statuses).toEqual([
        { id: 'bet_m0', status: 'cashed_out' },
        { id: 'bet_m1', status: 'active' },
        { id: 'bet_m2', status: 'active' },
        { id: 'bet_m3', status: 'active' },
        { id: 'bet_m4', status: 'cashed_out' },
      ]);
      const stored = await db.all<{ idem_key: string }>(
        "SELECT idem_key FROM idempotency_keys WHERE idem_key LIKE 'm%' ORDER BY idem_key",
      );
      expect(stored.map((k) => k.idem_key)).toEqual(['m-first', 'm0', 'm3', 'm5']);
      expect(await count("SELECT COUNT(*) AS n FROM events WHERE type = 'bet.settled'")).toBe(3);
      expect(await count("SELECT COUNT(*) AS n FROM events WHERE data LIKE '%bet_m1%'")).toBe(0);
    },
  );

  it.runIf(kind === 'postgres')('skips a bet another transaction holds rather than wait for it', async () => {
    const calls = recordStatements();
    const ids = await insertBets('bet_l', 2);
    let release = (): void => {};
    const released = new Promise<void>((r) => (release = r));
    let locked = (): void => {};
    const lockTaken = new Promise<void>((r) => (locked = r));
    // Another transaction (the engine settling bets of the round, say) holds bet_l0 meanwhile.
    const holder = db.transaction(async (tx) => {
      await tx.get("SELECT id FROM bets WHERE id = 'bet_l0' FOR UPDATE");
      locked();
      await Promise.race([released, new Promise((r) => setTimeout(r, 5_000))]);
    });
    await lockTaken;
    const answers = await Promise.all([
      commands.cashout(claim('l-first'), 'bet_1', decideAt137),
      commands.cashout(claim('l0'), ids[0]!, decideAt137),
      commands.cashout(claim('l1'), ids[1]!, decideAt137),
    ]);
    release();
    await holder;
    expect(keysPerCall(calls)).toEqual([['l0', 'l1']]);
    // Answered before the holder let go: the full path waits for the bet on its own.
    expect(answers).toEqual([{ outcome: 'settled' }, { outcome: 'full_path' }, { outcome: 'settled' }]);
    expect(await db.get("SELECT status FROM bets WHERE id = 'bet_l0'")).toEqual({ status: 'active' });
    expect(await count("SELECT COUNT(*) AS n FROM idempotency_keys WHERE idem_key = 'l0'")).toBe(0);
  });

  it.runIf(kind === 'postgres')('sends each cash-out of a failed call again on its own', async () => {
    // Nothing of the call committed, as after a deadlock or a serialization failure.
    const recorded = new PreparedCalls(db, {
      name: 'rbs_cash_outs',
      error: Object.assign(new Error('deadlock detected'), { code: '40P01' }),
    });
    const calls = recorded.calls;
    const ids = await insertBets('bet_r', 4);
    const answers = await Promise.all([
      commands.cashout(claim('r-first'), 'bet_1', decideAt137),
      ...ids.map((id) => commands.cashout(claim(`r-${id}`), id, decideAt137)),
    ]);
    expect(recorded.failed).toBe(true);
    expect(answers).toEqual([...ids, 'bet_1'].map(() => ({ outcome: 'settled' })));
    // bet_1 alone, then the four again one per call after their call failed.
    expect(calls.filter((c) => c.name === 'rbs_cash_out')).toHaveLength(5);
    expect(await count("SELECT COUNT(*) AS n FROM bets WHERE status = 'cashed_out'")).toBe(5);
    expect(await count("SELECT COUNT(*) AS n FROM events WHERE type = 'bet.settled'")).toBe(5);
  });

  it.runIf(kind === 'postgres')('reads each cash-out of a failed read again on its own', async () => {
    const recorded = new PreparedCalls(db, {
      name: 'rbs_bets_and_rounds',
      error: Object.assign(new Error('terminating connection'), { code: '57P01' }),
    });
    const ids = await insertBets('bet_f', 3);
    const boom = new Error('decide failed');
    const answers = await Promise.allSettled([
      commands.cashout(claim('f-first'), 'bet_1', decideAt137),
      ...ids.map((id) => commands.cashout(claim(`f-${id}`), id, decideAt137)),
      commands.cashout(claim('f-boom'), 'bet_1', () => {
        throw boom;
      }),
    ]);
    expect(recorded.failed).toBe(true);
    expect(answers).toEqual([
      ...[1, ...ids].map(() => ({ status: 'fulfilled', value: { outcome: 'settled' } })),
      { status: 'rejected', reason: boom },
    ]);
    // bet_1 read alone, then the four again one per read after theirs failed.
    expect(recorded.calls.filter((c) => c.name === 'rbs_bet_and_round')).toHaveLength(5);
    expect(await count("SELECT COUNT(*) AS n FROM bets WHERE status = 'cashed_out'")).toBe(4);
    expect(await count("SELECT COUNT(*) AS n FROM events WHERE type = 'bet.settled'")).toBe(4);
  });

  const WRITES = ['rbs_cash_out', 'rbs_cash_outs'];
  const READS = new Set(['rbs_bet_and_round', 'rbs_bets_and_rounds']);
  /**
   * Holds the next write call before it reaches the store. `during` runs while it is held; the write
   * is let go once `during` has seen a read made meanwhile come back (or has failed waiting for one).
   */
  const whileWriteHeld = async (
    hold: CallHold,
    start: () => void,
    during: () => void,
  ): Promise<{ held: PreparedCall; reads: PreparedCall[] }> => {
    const holding = hold.arm(WRITES);
    start();
    const held = await holding;
    try {
      during();
      await eventually(
        async () => hold.duringHold.some((c) => READS.has(c.name) && c.returned),
        3_000,
        5,
        'a read made while the write was in flight',
      );
      // Time for a second write to go out, were the write stage not one call at a time.
      await new Promise((r) => setTimeout(r, 20));
      return { held, reads: hold.duringHold.filter((c) => READS.has(c.name)) };
    } finally {
      hold.release();
    }
  };

  it.runIf(kind === 'postgres')('reads the next cash-outs while the write before them is in flight', async () => {
    const hold = new CallHold();
    aroundPrepared(db, hold.around);
    const calls = recordStatements();
    const ids = await insertBets('bet_p', 3);
    let first: Promise<unknown> = Promise.resolve();
    let rest: Promise<unknown[]> = Promise.resolve([]);
    const { held, reads } = await whileWriteHeld(
      hold,
      () => {
        first = commands.cashout(claim('p-first'), 'bet_1', decideAt137);
      },
      () => {
        rest = Promise.all(ids.map((id) => commands.cashout(claim(`p-${id}`), id, decideAt137)));
      },
    );
    // bet_1's write alone; the three others read together while it was held, and no write went out
    // beside it (the write stage keeps one call in flight).
    expect(held.name).toBe('rbs_cash_out');
    expect(reads.map((c) => c.name)).toEqual(['rbs_bets_and_rounds']);
    expect(JSON.parse(String(reads[0]!.params[0]))).toEqual(ids);
    expect(hold.duringHold.map((c) => c.name)).toEqual(['rbs_bets_and_rounds']);

    expect(await first).toEqual({ outcome: 'settled' });
    expect(await rest).toEqual(ids.map(() => ({ outcome: 'settled' })));
    // Their writes waited for the held one, then went out together.
    expect(keysPerCall(calls)).toEqual([ids.map((id) => `p-${id}`)]);
    const bets = await db.all<{ id: string; amount: number; payout: number; status: string }>(
      "SELECT id, amount, payout, status FROM bets WHERE id LIKE 'bet_p%' OR id = 'bet_1' ORDER BY id",
    );
    expect(bets.map((b) => ({ id: b.id, status: b.status, payout: Number(b.payout) }))).toEqual(
      bets.map((b) => ({ id: b.id, status: 'cashed_out', payout: Math.floor((Number(b.amount) * 137) / 100) })),
    );
    expect(await count("SELECT COUNT(*) AS n FROM idempotency_keys WHERE idem_key LIKE 'p-%'")).toBe(4);
    expect(await count("SELECT COUNT(*) AS n FROM events WHERE type = 'bet.settled'")).toBe(4);
  });

  it.runIf(kind === 'postgres')(
    'answers a cash-out read while a write of the same bet is in flight as if it came after that write',
    async () => {
      const hold = new CallHold();
      aroundPrepared(db, hold.around);
      const calls = recordStatements();
      /** What each cash-out's decide saw of bet_1, by key. */
      const seen = new Map<string, string | undefined>();
      const decideSeen = (key: string) => (bet: Bet | undefined) => {
        seen.set(key, bet?.status);
        return decideAt137(bet);
      };
      let first: Promise<unknown> = Promise.resolve();
      let others: Promise<unknown[]> = Promise.resolve([]);
      await whileWriteHeld(
        hold,
        () => {
          first = commands.cashout(claim('twice-a'), 'bet_1', decideSeen('twice-a'));
        },
        () => {
          others = Promise.all([
            // Another key for the same bet, and the same key again (a retry, say, from another process).
            commands.cashout(claim('twice-b'), 'bet_1', decideSeen('twice-b')),
            commands.cashout(claim('twice-a'), 'bet_1', decideSeen('twice-a again')),
          ]);
        },
      );
      // Both read bet_1 before the held write committed: still active, so both decided to settle it.
      expect(Object.fromEntries(seen)).toEqual({ 'twice-a': 'active', 'twice-b': 'active', 'twice-a again': 'active' });
      const settled = { outcome: 'settled' };
      expect(await first).toEqual(settled);
      const [other, again] = await others;
      // The write found the bet cashed out: that cash-out rolled back and is left to the full path.
      expect(other).toEqual({ outcome: 'full_path' });
      // The key was taken meanwhile: what it stored comes back, as for a repeat sent after.
      const stored = {
        outcome: 'existing',
        request_hash: 'hash-twice-a',
        status_code: 200,
        response: JSON.stringify({ bet_id: 'bet_1', payout: 137, multiplier: '1.37' }),
      };
      expect(again).toEqual(stored);
      expect(keysPerCall(calls)).toEqual([['twice-b', 'twice-a']]);
      // Paid once: one payout, one key, one event.
      const bet = await db.get<{ status: string; payout: number }>(
        "SELECT status, payout FROM bets WHERE id = 'bet_1'",
      );
      expect({ status: bet!.status, payout: Number(bet!.payout) }).toEqual({ status: 'cashed_out', payout: 137 });
      expect(await count("SELECT COUNT(*) AS n FROM idempotency_keys WHERE idem_key LIKE 'twice-%'")).toBe(1);
      expect(await count("SELECT COUNT(*) AS n FROM events WHERE type = 'bet.settled'")).toBe(1);
      expect(await count('SELECT COUNT(*) AS n FROM webhook_deliveries')).toBe(1);

      // One at a time, after the first: the other key is refused as not active (the full path's
      // answer too), and the first key replays what it stored.
      expect(await commands.cashout(claim('twice-b'), 'bet_1', decideAt137)).toEqual({ outcome: 'refused' });
      expect(await commands.cashout(claim('twice-a'), 'bet_1', decideAt137)).toEqual(stored);
      expect(await count("SELECT COUNT(*) AS n FROM events WHERE type = 'bet.settled'")).toBe(1);
    },
  );
});
