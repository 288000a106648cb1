import { forUpdate, type SqlExecutor, nullableNumber } from '../store/database';
import type { Game } from '../games/engine/round';
import {
  type ActiveCrashBet,
  type Bet,
  type BetStatus,
  CASHOUT_KINDS,
  type CashoutKind,
  isSettled,
  type ReservedStockRaceBet,
} from './bet';

export interface BetRow {
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
  /** Stock Race: the winning payout quoted at reserve (null before migration 013); Crash: always null. */
  potential_payout: number | null;
}

/** A row that breaks the invariants of its bet's type: a defect in whatever wrote it, never a client error. */
export class BetRowMisfit extends Error {
  constructor(row: Pick<BetRow, 'id' | 'game' | 'status'>, why: string) {
    super(`bet ${row.id} (${row.game}, ${row.status}) does not fit its type: ${why}`);
    this.name = 'BetRowMisfit';
  }
}

function parseSelections(r: BetRow): string[] {
  const parsed: unknown = r.selections === null ? null : JSON.parse(r.selections);
  if (!Array.isArray(parsed) || !parsed.every((s) => typeof s === 'string')) {
    throw new BetRowMisfit(r, 'a Stock Race bet has a list of stock symbols');
  }
  return parsed;
}

function cashoutKindOf(r: BetRow): CashoutKind {
  const kind = CASHOUT_KINDS.find((k) => k === r.cashout_kind);
  if (!kind) throw new BetRowMisfit(r, `a cash-out has a kind (${CASHOUT_KINDS.join(', ')})`);
  return kind;
}

function settledFields(
  r: BetRow,
  payout: number | null,
  settledAt: number | null,
): { payout: number; settledAt: number } {
  if (payout === null || settledAt === null) {
    throw new BetRowMisfit(r, 'a settled bet has a payout and a settlement time');
  }
  return { payout, settledAt };
}

function noCashoutFields(r: BetRow, multiplier: number | null): { cashoutMultiplier: null; cashoutKind: null } {
  if (multiplier !== null || r.cashout_kind !== null) {
    throw new BetRowMisfit(r, 'only a cash-out has a multiplier and a kind');
  }
  return { cashoutMultiplier: null, cashoutKind: null };
}

/**
 * The one place a row becomes a bet: the row's game and status pick the bet's type, and every field
 * that type promises is checked, so code holding a settled bet can rely on its payout being there.
 */
export function toBet(r: BetRow): Bet {
  const base = {
    id: r.id,
    operatorId: r.operator_id,
    roundId: r.round_id,
    roundNumber: Number(r.round_number),
    player: r.player,
    amount: Number(r.amount),
    placedAt: Number(r.placed_at),
  };
  const payout = nullableNumber(r.payout);
  const multiplier = nullableNumber(r.cashout_multiplier);
  const settledAt = nullableNumber(r.settled_at);
  const open = payout === null && multiplier === null && r.cashout_kind === null && settledAt === null;

  if (r.game === 'crash') {
    if (r.session_id !== null || r.currency !== null || r.selections !== null) {
      throw new BetRowMisfit(r, 'a Crash bet has no session, currency or selections');
    }
    // Object.assign onto the fresh base rather than `{ ...base, game, … }`: on Node 20's V8 a spread
    // followed by more properties takes a slow runtime path (microseconds a row); the keys' order is
    // the same.
    const crash = Object.assign(base, {
      game: r.game,
      sessionId: null,
      currency: null,
      selections: null,
      autoCashout: nullableNumber(r.auto_cashout),
      potentialPayout: nullableNumber(r.potential_payout),
    });
    switch (r.status) {
      case 'active':
        if (!open) throw new BetRowMisfit(r, 'an active bet has no result yet');
        return Object.assign(crash, { status: r.status });
      case 'cashed_out':
        if (multiplier === null) throw new BetRowMisfit(r, 'a cash-out has a multiplier');
        return Object.assign(crash, { status: r.status }, settledFields(r, payout, settledAt), {
          cashoutMultiplier: multiplier,
          cashoutKind: cashoutKindOf(r),
        });
      case 'lost':
      case 'void':
        return Object.assign(
          crash,
          { status: r.status },
          settledFields(r, payout, settledAt),
          noCashoutFields(r, multiplier),
        );
      default:
        throw new BetRowMisfit(r, 'a Crash bet is active, cashed_out, lost or void');
    }
  }
  if (r.game === 'stock_race') {
    if (r.session_id === null || r.currency === null) {
      throw new BetRowMisfit(r, 'a Stock Race bet has a session and a currency');
    }
    if (r.auto_cashout !== null) throw new BetRowMisfit(r, 'a Stock Race bet has no auto cash-out');
    const race = Object.assign(base, {
      game: r.game,
      sessionId: r.session_id,
      currency: r.currency,
      selections: parseSelections(r),
      autoCashout: null,
      potentialPayout: nullableNumber(r.potential_payout),
    });
    switch (r.status) {
      case 'reserved':
        if (!open) throw new BetRowMisfit(r, 'a reserved bet has no result yet');
        return Object.assign(race, { status: r.status });
      case 'won':
      case 'lost':
      case 'void':
        return Object.assign(
          race,
          { status: r.status },
          settledFields(r, payout, settledAt),
          noCashoutFields(r, multiplier),
        );
      default:
        throw new BetRowMisfit(r, 'a Stock Race bet is reserved, won, lost or void');
    }
  }
  throw new BetRowMisfit(r, 'no such game');
}

export interface BetFilter {
  operatorId: string;
  player?: string;
  roundId?: string;
  status?: BetStatus;
  game?: Game;
  limit: number;
}

/**
 * One page of an operator's bets of one game, newest first by (placed_at DESC, id). A player or a
 * round is required: each is the leading part of an existing index ((operator_id, player, placed_at)
 * and (round_id)), so a page never scans an operator's whole history.
 */
export interface BetPageQuery {
  operatorId: string;
  game: Game;
  player?: string;
  roundId?: string;
  status?: BetStatus;
  /** Where the previous page ended (its last bet): this page goes on after it. */
  after?: { placedAt: number; id: string };
  limit: number;
}

export const betRepository = {
  async insert(tx: SqlExecutor, bet: Bet): Promise<void> {
    const result = isSettled(bet) ? bet : null;
    await tx.run(
      `INSERT INTO bets (id, operator_id, game, round_id, round_number, player, session_id, currency, amount,
         auto_cashout, selections, status, payout, cashout_multiplier, cashout_kind, placed_at, settled_at,
         potential_payout)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
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
        bet.selections === null ? null : JSON.stringify(bet.selections),
        bet.status,
        result?.payout ?? null,
        result?.cashoutMultiplier ?? null,
        result?.cashoutKind ?? null,
        bet.placedAt,
        result?.settledAt ?? null,
        bet.potentialPayout,
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
    if (!statuses)
      return (await db.all<BetRow>('SELECT * FROM bets WHERE round_id = ? ORDER BY placed_at, id', [roundId])).map(
        toBet,
      );
    const marks = statuses.map(() => '?').join(', ');
    const rows = await db.all<BetRow>(
      `SELECT * FROM bets WHERE round_id = ? AND status IN (${marks}) ORDER BY placed_at, id`,
      [roundId, ...statuses],
    );
    return rows.map(toBet);
  },

  /** The Crash bets of a round still in play (active). */
  async activeCrashBets(db: SqlExecutor, roundId: string): Promise<ActiveCrashBet[]> {
    return (await betRepository.byRound(db, roundId, ['active'])).map((bet) => {
      if (bet.game === 'crash' && bet.status === 'active') return bet;
      throw new Error(`bet ${bet.id} was read as an active Crash bet but is a ${bet.game} bet, ${bet.status}`);
    });
  },

  /**
   * What each operator's cashed-out Crash bets of a round were paid, in total: the part of its
   * per-round cap the round has already used (operators without a cash-out are absent).
   */
  async crashPaidByOperator(db: SqlExecutor, roundId: string): Promise<Map<string, number>> {
    const rows = await db.all<{ operator_id: string; paid: number | string }>(
      `SELECT operator_id, SUM(payout) AS paid FROM bets
       WHERE round_id = ? AND status = 'cashed_out' GROUP BY operator_id`,
      [roundId],
    );
    return new Map(rows.map((r) => [r.operator_id, Number(r.paid)]));
  },

  /**
   * One operator's standing in a Crash round, in one read: the bets it still has in play, the stake
   * they hold (open) and what its cashed-out bets were paid (paid), the exposure its caps are set on.
   */
  async crashStanding(
    db: SqlExecutor,
    roundId: string,
    operatorId: string,
  ): Promise<{ activeIds: Set<string>; open: number; paid: number }> {
    const rows = await db.all<{ id: string; status: string; amount: number | string; payout: number | string | null }>(
      `SELECT id, status, amount, payout FROM bets
       WHERE round_id = ? AND status IN ('active', 'cashed_out') AND operator_id = ?`,
      [roundId, operatorId],
    );
    const activeIds = new Set<string>();
    let open = 0;
    let paid = 0;
    for (const row of rows) {
      if (row.status === 'active') {
        activeIds.add(row.id);
        open += Number(row.amount);
      } else paid += Number(row.payout ?? 0);
    }
    return { activeIds, open, paid };
  },

  /** The Stock Race bets of a round still in play (reserved). */
  async reservedStockRaceBets(db: SqlExecutor, roundId: string): Promise<ReservedStockRaceBet[]> {
    return (await betRepository.byRound(db, roundId, ['reserved'])).map((bet) => {
      if (bet.game === 'stock_race' && bet.status === 'reserved') return bet;
      throw new Error(`bet ${bet.id} was read as a reserved Stock Race bet but is a ${bet.game} bet, ${bet.status}`);
    });
  },

  async find(db: SqlExecutor, f: BetFilter): Promise<Bet[]> {
    const where = ['operator_id = ?'];
    const params: (string | number)[] = [f.operatorId];
    if (f.player) where.push('player = ?'), params.push(f.player);
    if (f.roundId) where.push('round_id = ?'), params.push(f.roundId);
    if (f.status) where.push('status = ?'), params.push(f.status);
    if (f.game) where.push('game = ?'), params.push(f.game);
    params.push(f.limit);
    const rows = await db.all<BetRow>(
      `SELECT * FROM bets WHERE ${where.join(' AND ')} ORDER BY placed_at DESC, id LIMIT ?`,
      params,
    );
    return rows.map(toBet);
  },

  async page(db: SqlExecutor, q: BetPageQuery): Promise<Bet[]> {
    if (q.player === undefined && q.roundId === undefined) {
      throw new Error('a page of bets is read by player or by round: the indexes that serve it start with those');
    }
    const where = ['operator_id = ?', 'game = ?'];
    const params: (string | number)[] = [q.operatorId, q.game];
    if (q.player !== undefined) where.push('player = ?'), params.push(q.player);
    if (q.roundId !== undefined) where.push('round_id = ?'), params.push(q.roundId);
    if (q.status !== undefined) where.push('status = ?'), params.push(q.status);
    if (q.after) {
      // `placed_at <= ?` bounds the index range; the OR then skips the cursor's millisecond up to its id.
      where.push('placed_at <= ? AND (placed_at < ? OR id > ?)');
      params.push(q.after.placedAt, q.after.placedAt, q.after.id);
    }
    params.push(q.limit);
    const rows = await db.all<BetRow>(
      `SELECT * FROM bets WHERE ${where.join(' AND ')} ORDER BY placed_at DESC, id LIMIT ?`,
      params,
    );
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
    bet: Pick<Bet, 'id' | 'status'>,
    result: { status: BetStatus; payout: number; multiplier: number | null; kind: CashoutKind | null; at: number },
  ): Promise<boolean> {
    const r = await tx.run(
      `UPDATE bets SET status = ?, payout = ?, cashout_multiplier = ?, cashout_kind = ?, settled_at = ?
       WHERE id = ? AND status = ?`,
      [result.status, result.payout, result.multiplier, result.kind, result.at, bet.id, bet.status],
    );
    return r.changes === 1;
  },

  /**
   * settle for many bets that were all in play as `open`, with the same one-winner guarantee: the ids
   * that were still open and changed. PostgreSQL takes them in one statement (a round trip per bet was
   * what held up an engine tick paying hundreds of auto cash-outs); SQLite's statements run in-process
   * within the same synchronous transaction, so one each costs no round trip.
   */
  async settleMany(tx: SqlExecutor, open: BetStatus, results: readonly SettleResult[]): Promise<Set<string>> {
    if (results.length === 0) return new Set();
    if (tx.dialect !== 'postgres') {
      const won = new Set<string>();
      for (const r of results) if (await betRepository.settle(tx, { id: r.id, status: open }, r)) won.add(r.id);
      return won;
    }
    const rows = await tx.all<{ id: string }>(
      `UPDATE bets AS b SET status = v.status, payout = v.payout, cashout_multiplier = v.multiplier,
              cashout_kind = v.kind, settled_at = v.at
         FROM jsonb_to_recordset(?::jsonb)
           AS v(id text, status text, payout bigint, multiplier bigint, kind text, at bigint)
        WHERE b.id = v.id AND b.status = ?
       RETURNING b.id`,
      [JSON.stringify(results), open],
    );
    return new Set(rows.map((r) => r.id));
  },
};

export interface SettleResult {
  id: string;
  status: BetStatus;
  payout: number;
  multiplier: number | null;
  kind: CashoutKind | null;
  at: number;
}
