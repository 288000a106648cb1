import type { Game } from '../games/engine/round';
import type { SqlExecutor } from '../store/database';

// A settled bet that was not voided: the stake was at risk and the payout reflects the game.
const SETTLED = `status NOT IN ('active', 'reserved', 'void')`;

// Sums leave the store as decimal text and become bigints: a sum of safe integers need not be one
// (PostgreSQL's SUM of bigint is numeric, which the driver hands over as a string; better-sqlite3
// rounds an integer past 2^53 to the nearest double). SQLite's SUM of integers is exact up to 2^63.
const exactSum = (column: string): string => `CAST(COALESCE(SUM(${column}), 0) AS TEXT)`;
const big = (text: unknown): bigint => BigInt(String(text ?? '0'));

export interface SettledTotalRow {
  game: Game;
  currency: string | null;
  bets: number;
  /** Minor units (Stock Race) or plain units (Crash), exact. */
  staked: bigint;
  paid: bigint;
}

export interface AttentionCounts {
  pendingSettlements: number;
  deadDeliveries: number;
  /** Flags raised in the last day that nobody has acknowledged yet: acknowledged ones need no attention. */
  openFlagsLastDay: number;
  endpoints: number;
}

/**
 * Read models for the partner dashboard: sums and counts over several aggregates (bets, wallet
 * settlements, webhook deliveries and endpoints, compliance flags), scoped to one operator. Reads only.
 */
export const reportRepository = {
  /** Stakes and payouts of one operator's settled bets, per game and currency. */
  async settledTotals(db: SqlExecutor, operatorId: string): Promise<SettledTotalRow[]> {
    const rows = await db.all<{ game: Game; currency: string | null; n: number; staked: unknown; paid: unknown }>(
      `SELECT game, currency, COUNT(*) AS n, ${exactSum('amount')} AS staked, ${exactSum('payout')} AS paid FROM bets
       WHERE operator_id = ? AND ${SETTLED} GROUP BY game, currency ORDER BY game, currency`,
      [operatorId],
    );
    return rows.map((r) => ({
      game: r.game,
      currency: r.currency,
      bets: Number(r.n),
      staked: big(r.staked),
      paid: big(r.paid),
    }));
  },

  /**
   * Stakes and payouts of one operator's settled bets in one game and currency, per round: the
   * latest `limit` rounds, oldest first.
   */
  async settledByRound(
    db: SqlExecutor,
    q: { operatorId: string; game: Game; currency: string | null; limit: number },
  ): Promise<{ round_number: number; staked: bigint; paid: bigint }[]> {
    const rows = await db.all<{ round_number: number; staked: unknown; paid: unknown }>(
      `SELECT round_number, ${exactSum('amount')} AS staked, ${exactSum('payout')} AS paid FROM bets
       WHERE operator_id = ? AND game = ? AND ${q.currency === null ? 'currency IS NULL' : 'currency = ?'}
         AND ${SETTLED}
       GROUP BY round_number ORDER BY round_number DESC LIMIT ?`,
      q.currency === null ? [q.operatorId, q.game, q.limit] : [q.operatorId, q.game, q.currency, q.limit],
    );
    return rows
      .reverse()
      .map((r) => ({ round_number: Number(r.round_number), staked: big(r.staked), paid: big(r.paid) }));
  },

  /**
   * The bets behind some settle calls: their currency and payout in the store's units, which the
   * settle call's body only carries as a JSON decimal with no currency.
   */
  async betPayouts(
    db: SqlExecutor,
    operatorId: string,
    betIds: readonly string[],
  ): Promise<{ id: string; currency: string | null; payout: number | null }[]> {
    if (betIds.length === 0) return [];
    const rows = await db.all<{ id: string; currency: string | null; payout: number | null }>(
      `SELECT id, currency, payout FROM bets WHERE operator_id = ? AND id IN (${betIds.map(() => '?').join(', ')})`,
      [operatorId, ...betIds],
    );
    return rows.map((r) => ({ id: r.id, currency: r.currency, payout: r.payout === null ? null : Number(r.payout) }));
  },

  /**
   * What needs the operator's attention: settle calls not confirmed, dead deliveries, recent flags not yet
   * acknowledged (read from the partial index of open flags), endpoints.
   */
  async attention(db: SqlExecutor, operatorId: string, flagsSince: number): Promise<AttentionCounts> {
    const count = async (sql: string, params: (string | number)[]): Promise<number> =>
      Number((await db.get<{ n: number }>(sql, params))?.n ?? 0);
    return {
      pendingSettlements: await count(
        `SELECT COUNT(*) AS n FROM wallet_settlements WHERE operator_id = ? AND status = 'pending'`,
        [operatorId],
      ),
      deadDeliveries: await count(
        `SELECT COUNT(*) AS n FROM webhook_deliveries WHERE operator_id = ? AND status = 'dead'`,
        [operatorId],
      ),
      openFlagsLastDay: await count(
        `SELECT COUNT(*) AS n FROM compliance_flags
         WHERE operator_id = ? AND created_at > ? AND acknowledged_at IS NULL`,
        [operatorId, flagsSince],
      ),
      endpoints: await count('SELECT COUNT(*) AS n FROM webhook_endpoints WHERE operator_id = ?', [operatorId]),
    };
  },
};
