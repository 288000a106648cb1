import { afterCommit } from '../observability/instrumented-db';
import { isTestOperator } from '../webhooks/events';
import { forUpdate, type SqlExecutor, nullableNumber } from '../store/database';
import type { Game } from '../games/engine/round';
import type { Bet, BetStatus, CashoutKind } from './bet';

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
