import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { freshDatabase, STORES } from '../../../test/support/harness';
import type { Bet, CashedOutCrashBet } from '../../bets/bet';
import { betSettledEvent } from '../../bets/bet-events';
import type { KeyClaim } from '../../bets/bet-commands';
import type { Database } from '../../store/database';
import { operatorEventRow } from '../../webhooks/event-rows';
import type { Round } from '../engine/round';
import { roundRepository } from '../engine/round-repository';
import { type CashoutPlan, cashoutCommand } from './crash-bet-commands';

/**
 * The cash-out command unit on each store (SQLite: read, decide and write in one synchronous unit;
 * PostgreSQL: one read, then rbs_cash_out of migration 007): what it writes, what it answers for a
 * key already used, and that a bet or round that changed after the read leaves it to the full path.
 */
describe.each(STORES)('cash-out command unit on %s', (kind) => {
  let db: Database;
  let dispose: () => Promise<void>;
  const now = 2_000_000;
  let round: Round;

  beforeEach(async () => {
    const fresh = await freshDatabase(kind);
    db = fresh.db;
    dispose = fresh.dispose;
    await db.transaction(async (tx) => {
      await tx.run(
        `INSERT INTO operators (id, name, api_key, secret_enc, status, settings, created_at, updated_at) VALUES ('op', 'n', 'k', 'x', 'active', '{}', 1, 1)`,
      );
      // Subscribed to bet.settled (gets a delivery), and one that is not (gets none).
      for (const [id, events] of [
        ['we_1', '["bet.settled"]'],
        ['we_2', '["round.opened"]'],
      ]) {
        await tx.run(
          `INSERT INTO webhook_endpoints (id, operator_id, url, surface, events, enabled, secret_enc, created_at, updated_at)
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
  afterEach(async () => dispose());

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
    const answer = await cashoutCommand(db, claim('k1'), 'bet_1', (bet, r) => {
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
    const again = await cashoutCommand(db, claim('k1'), 'bet_1', () => ({
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
    const answer = await cashoutCommand(db, claim('k2'), 'bet_404', (bet) => {
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
        `INSERT INTO bets (id, operator_id, game, round_id, round_number, player, amount, status, payout, cashout_multiplier,
           cashout_kind, placed_at, settled_at)
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
    expect(await cashoutCommand(db, claim('k3'), 'bet_1', (bet) => plan(bet!, 10))).toEqual({ outcome: 'full_path' });
    expect(await count("SELECT COUNT(*) AS n FROM bets WHERE status = 'active'")).toBe(1);
    expect(await count('SELECT COUNT(*) AS n FROM idempotency_keys')).toBe(0);
    // Five milliseconds apart is no streak within a 4 ms window.
    expect(await cashoutCommand(db, claim('k3'), 'bet_1', (bet) => plan(bet!, 4))).toEqual({ outcome: 'settled' });
  });

  it.runIf(kind === 'postgres')('leaves a bet settled between its read and the unit to the full path', async () => {
    await db.transaction((tx) =>
      tx.run("UPDATE bets SET status = 'lost', payout = 0, settled_at = 1 WHERE id = 'bet_1'"),
    );
    // The decision was made on the row as it was read before (active).
    const answer = await cashoutCommand(db, claim('k4'), 'bet_1', (bet) => settlePlan(bet!));
    expect(answer).toEqual({ outcome: 'full_path' });
    expect(await count('SELECT COUNT(*) AS n FROM idempotency_keys')).toBe(0);
    expect(await count('SELECT COUNT(*) AS n FROM events')).toBe(0);
  });

  it.runIf(kind === 'postgres')('leaves a round whose engine fell silent after the read to the full path', async () => {
    const answer = await cashoutCommand(
      db,
      claim('k5'),
      'bet_1',
      (bet) => ({ ...(settlePlan(bet!) as object), aliveSince: now }) as CashoutPlan,
    );
    expect(answer).toEqual({ outcome: 'full_path' });
    expect(await count("SELECT COUNT(*) AS n FROM bets WHERE status = 'active'")).toBe(1);
  });
});
