import { afterCommit } from '../observability/instrumented-db';
import { isTestOperator } from '../operators/operator-mode';
import { forUpdate, type SqlExecutor, nullableNumber } from '../store/database';
import type { Game } from '../games/engine/round';
import type { Bet, BetStatus, CashoutKind } from './bet';

interface BetRow {
  id: string;
  operator_id: string;
  game: Game;
  round_id: string;
  round_number: number;
  player: string;
  session_id: string | null;
  currency: string | null;
  amount: number;
  auto_cashout: number | null;
  selections: string | null;
  status: BetStatus;
  payout: number | null;
  cashout_multiplier: number | null;
  cashout_kind: CashoutKind | null;
  placed_at: number;
  settled_at: number | null;
}

export function toBet(r: BetRow): Bet {
  return {
    id: r.id,
    operatorId: r.operator_id,
    game: r.game,
    roundId: r.round_id,
    roundNumber: Number(r.round_number),
    player: r.player,
    sessionId: r.session_id,
    currency: r.currency,
    amount: Number(r.amount),
    autoCashout: nullableNumber(r.auto_cashout),
    selections: r.selections ? (JSON.parse(r.selections) as string[]) : null,
    status: r.status,
    payout: nullableNumber(r.payout),
    cashoutMultiplier: nullableNumber(r.cashout_multiplier),
    cashoutKind: r.cashout_kind,
    placedAt: Number(r.placed_at),
    settledAt: nullableNumber(r.settled_at),
  };
}

export interface BetFilter {
  operatorId: string;
  player?: string;
  roundId?: string;
  status?: BetStatus;
  game?: Game;
  limit: number;
}

export const betRepository = {
  async insert(tx: SqlExecutor, bet: Bet): Promise<void> {
    await tx.run(
      `INSERT INTO bets (id, operator_id, game, round_id, round_number, player, session_id, currency, amount, auto_cashout,
         selections, status, payout, cashout_multiplier, cashout_kind, placed_at, settled_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        bet.id,
        bet.operatorId,
        bet.game,
        bet.roundId,
        bet.roundNumber,
        bet.player,
        bet.sessionId,
        bet.currency,
        bet.amount,
        bet.autoCashout,
        bet.selections ? JSON.stringify(bet.selections) : null,
        bet.status,
        bet.payout,
        bet.cashoutMultiplier,
        bet.cashoutKind,
        bet.placedAt,
        bet.settledAt,
      ],
    );
  },

  async byId(db: SqlExecutor, id: string): Promise<Bet | undefined> {
    const row = await db.get<BetRow>('SELECT * FROM bets WHERE id = ?', [id]);
    return row ? toBet(row) : undefined;
  },

  async byIdForUpdate(tx: SqlExecutor, id: string): Promise<Bet | undefined> {
    const row = await tx.get<BetRow>(`SELECT * FROM bets WHERE id = ?${forUpdate(tx)}`, [id]);
    return row ? toBet(row) : undefined;
  },

  async byRound(db: SqlExecutor, roundId: string, statuses?: readonly BetStatus[]): Promise<Bet[]> {
    if (!statuses) return (await db.all<BetRow>('SELECT * FROM bets WHERE round_id = ? ORDER BY placed_at, id', [roundId])).map(toBet);
    const marks = statuses.map(() => '?').join(', ');
    const rows = await db.all<BetRow>(`SELECT * FROM bets WHERE round_id = ? AND status IN (${marks}) ORDER BY placed_at, id`, [roundId, ...statuses]);
    return rows.map(toBet);
  },

  async find(db: SqlExecutor, f: BetFilter): Promise<Bet[]> {
    const where = ['operator_id = ?'];
    const params: (string | number)[] = [f.operatorId];
    if (f.player) (where.push('player = ?'), params.push(f.player));
    if (f.roundId) (where.push('round_id = ?'), params.push(f.roundId));
    if (f.status) (where.push('status = ?'), params.push(f.status));
    if (f.game) (where.push('game = ?'), params.push(f.game));
    params.push(f.limit);
    const rows = await db.all<BetRow>(`SELECT * FROM bets WHERE ${where.join(' AND ')} ORDER BY placed_at DESC, id LIMIT ?`, params);
    return rows.map(toBet);
  },

  /** How many bets a player of this operator placed after `since`. */
  async countPlacedSince(db: SqlExecutor, operatorId: string, player: string, since: number): Promise<number> {
    const row = await db.get<{ n: number }>(
      'SELECT COUNT(*) AS n FROM bets WHERE operator_id = ? AND player = ? AND placed_at > ?',
      [operatorId, player, since],
    );
    return Number(row?.n ?? 0);
  },

  /**
   * A player's latest manual Crash cash-outs placed after `since` (newest first), with when each
   * was paid and when its round started running (null when it never ran).
   */
  async manualCashoutTimings(
    db: SqlExecutor,
    q: { operatorId: string; player: string; since: number; limit: number },
  ): Promise<{ betId: string; settledAt: number | null; runningAt: number | null }[]> {
    const rows = await db.all<{ id: string; settled_at: number | null; running_at: number | null }>(
      `SELECT b.id, b.settled_at, r.running_at FROM bets b JOIN rounds r ON r.id = b.round_id
       WHERE b.operator_id = ? AND b.player = ? AND b.game = 'crash' AND b.status = 'cashed_out'
         AND b.cashout_kind = 'manual' AND b.placed_at > ? ORDER BY b.placed_at DESC, b.id LIMIT ?`,
      [q.operatorId, q.player, q.since, q.limit],
    );
    return rows.map((r) => ({
      betId: r.id,
      settledAt: nullableNumber(r.settled_at),
      runningAt: nullableNumber(r.running_at),
    }));
  },

  /** A player session's bets, newest first. */
  async bySession(db: SqlExecutor, sessionId: string, limit: number): Promise<Bet[]> {
    const rows = await db.all<BetRow>('SELECT * FROM bets WHERE session_id = ? ORDER BY placed_at DESC, id LIMIT ?', [
      sessionId,
      limit,
    ]);
    return rows.map(toBet);
  },

  /** How many bets one operator placed in each of these rounds (rounds without any are absent). */
  async countsByRound(db: SqlExecutor, operatorId: string, roundIds: readonly string[]): Promise<Map<string, number>> {
    if (roundIds.length === 0) return new Map();
    const marks = roundIds.map(() => '?').join(', ');
    const rows = await db.all<{ round_id: string; n: number }>(
      `SELECT round_id, COUNT(*) AS n FROM bets WHERE operator_id = ? AND round_id IN (${marks}) GROUP BY round_id`,
      [operatorId, ...roundIds],
    );
    return new Map(rows.map((r) => [r.round_id, Number(r.n)]));
  },

  /**
   * Settles a bet only if it is still open: the conditional UPDATE makes a manual cash-out, an
   * auto cash-out and the round's close race safely, with exactly one winner.
   */
  async settle(
    tx: SqlExecutor,
    bet: Pick<Bet, 'id' | 'status' | 'game' | 'currency' | 'operatorId'>,
    result: { status: BetStatus; payout: number; multiplier: number | null; kind: CashoutKind | null; at: number },
  ): Promise<boolean> {
    const r = await tx.run(
      `UPDATE bets SET status = ?, payout = ?, cashout_multiplier = ?, cashout_kind = ?, settled_at = ? WHERE id = ? AND status = ?`,
      [result.status, result.payout, result.multiplier, result.kind, result.at, bet.id, bet.status],
    );
    if (r.changes !== 1) return false;
    // Sandbox bets are test data: live metrics never count them.
    if (await isTestOperator(tx, bet.operatorId)) return true;
    afterCommit(tx, (m) => {
      m.betsSettled.inc({ game: bet.game, outcome: result.status });
      if (result.payout > 0) m.payouts.inc({ game: bet.game, currency: bet.currency ?? 'none' }, result.payout);
    });
    return true;
  },
};
