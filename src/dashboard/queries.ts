import type { Bet } from '../bets/bet';
import { formatMultiplier } from '../games/crash/multiplier';
import { currencyExponent, formatMinor } from '../money/currency';
import type { Operator } from '../operators/operator';
import type { Config } from '../config/config';
import { type Game, parseCrashOutcome } from '../games/engine/round';
import type { SqlExecutor } from '../store/database';

/** Read models only the dashboard needs; everything that changes state goes through the services. */

export interface RtpPoint {
  round_number: number;
  /** Cumulative payouts / stakes over the rounds up to this one, in percent. */
  rtp: number;
}

export interface RtpSeries {
  game: Game;
  currency: string | null;
  configured: number;
  points: RtpPoint[];
}

export interface RtpTotal {
  game: Game;
  currency: string | null;
  bets: number;
  staked: number;
  paid: number;
  rtp: number | null;
  /** The sums as the bets' surface shows money ("12.50 EUR", or plain units). */
  staked_text: string;
  paid_text: string;
}

export interface LiveStats {
  crash_points: { round_number: number; crash_point: number }[];
  rtp: RtpSeries[];
  totals: RtpTotal[];
}

// A settled bet that was not voided: the stake was at risk and the payout reflects the game.
const SETTLED = `status NOT IN ('active', 'reserved', 'void')`;

/** Percent with two decimals, from integer sums (the division is the only floating step, for display). */
const percent = (paid: number, staked: number): number => Math.round((paid * 10_000) / staked) / 100;

/** Configured return to player, in percent: Crash from the house edge, Stock Race from the operator's setting. */
export function configuredRtp(game: Game, config: Config, operator: Operator): number {
  return game === 'crash' ? (10_000 - config.crash.houseEdgeBp) / 100 : operator.settings.stock_race.rtp_bp / 100;
}

export async function liveStats(db: SqlExecutor, config: Config, operator: Operator): Promise<LiveStats> {
  // A sandbox operator's charts show its own rounds; everyone else's the live ones.
  const sandbox = operator.mode === 'test';
  const crashRows = await db.all<{ round_number: number; outcome: string }>(
    `SELECT round_number, outcome FROM rounds WHERE game = 'crash' AND status = 'closed'
     AND ${sandbox ? 'operator_id = ?' : 'operator_id IS NULL'} ORDER BY round_number DESC LIMIT 60`,
    sandbox ? [operator.id] : [],
  );
  const crash_points = crashRows
    .map((r) => ({ round_number: Number(r.round_number), crash_point: formatMultiplier(parseCrashOutcome(r.outcome).crash_point) }))
    .reverse();

  const totalsRows = await db.all<{ game: Game; currency: string | null; n: number; staked: unknown; paid: unknown }>(
    `SELECT game, currency, COUNT(*) AS n, SUM(amount) AS staked, SUM(payout) AS paid FROM bets
     WHERE operator_id = ? AND ${SETTLED} GROUP BY game, currency ORDER BY game, currency`,
    [operator.id],
  );
  const totals: RtpTotal[] = totalsRows.map((r) => {
    const staked = Number(r.staked ?? 0);
    const paid = Number(r.paid ?? 0);
    const currency = { currency: r.currency };
    return {
      game: r.game,
      currency: r.currency,
      bets: Number(r.n),
      staked,
      paid,
      rtp: staked > 0 ? percent(paid, staked) : null,
      staked_text: money(currency, staked),
      paid_text: money(currency, paid),
    };
  });

  // One line per game: Crash amounts are plain units; Stock Race follows the currency staked most,
  // since a ratio across currencies of different minor units would mean nothing.
  const rtp: RtpSeries[] = [];
  for (const game of ['crash', 'stock_race'] as const) {
    const main = totals.filter((t) => t.game === game).sort((a, b) => b.bets - a.bets)[0];
    const currency = main?.currency ?? null;
    const rows = await db.all<{ round_number: number; staked: unknown; paid: unknown }>(
      `SELECT round_number, SUM(amount) AS staked, SUM(payout) AS paid FROM bets
       WHERE operator_id = ? AND game = ? AND ${currency === null ? 'currency IS NULL' : 'currency = ?'} AND ${SETTLED}
       GROUP BY round_number ORDER BY round_number DESC LIMIT 100`,
      currency === null ? [operator.id, game] : [operator.id, game, currency],
    );
    let staked = 0;
    let paid = 0;
    const points: RtpPoint[] = [];
    for (const r of rows.reverse()) {
      staked += Number(r.staked ?? 0);
      paid += Number(r.paid ?? 0);
      if (staked > 0) points.push({ round_number: Number(r.round_number), rtp: percent(paid, staked) });
    }
    rtp.push({ game, currency, configured: configuredRtp(game, config, operator), points });
  }
  return { crash_points, rtp, totals };
}

/** Bets placed by this operator in each of these rounds. */
export async function betCountsByRound(db: SqlExecutor, operatorId: string, roundIds: string[]): Promise<Map<string, number>> {
  if (roundIds.length === 0) return new Map();
  const marks = roundIds.map(() => '?').join(', ');
  const rows = await db.all<{ round_id: string; n: number }>(
    `SELECT round_id, COUNT(*) AS n FROM bets WHERE operator_id = ? AND round_id IN (${marks}) GROUP BY round_id`,
    [operatorId, ...roundIds],
  );
  return new Map(rows.map((r) => [r.round_id, Number(r.n)]));
}

export interface Overview {
  pendingSettlements: number;
  deadDeliveries: number;
  flagsLastDay: number;
  endpoints: number;
}

export async function overview(db: SqlExecutor, operatorId: string, now: number): Promise<Overview> {
  const count = async (sql: string, params: (string | number)[]): Promise<number> => Number((await db.get<{ n: number }>(sql, params))?.n ?? 0);
  return {
    pendingSettlements: await count(`SELECT COUNT(*) AS n FROM wallet_settlements WHERE operator_id = ? AND status = 'pending'`, [operatorId]),
    deadDeliveries: await count(`SELECT COUNT(*) AS n FROM webhook_deliveries WHERE operator_id = ? AND status = 'dead'`, [operatorId]),
    flagsLastDay: await count('SELECT COUNT(*) AS n FROM compliance_flags WHERE operator_id = ? AND created_at > ?', [operatorId, now - 86_400_000]),
    endpoints: await count('SELECT COUNT(*) AS n FROM webhook_endpoints WHERE operator_id = ?', [operatorId]),
  };
}

/** Money as the bet's surface shows it, with its currency when it has one. */
export function money(bet: Pick<Bet, 'currency'>, minor: number | null): string {
  if (minor === null) return '–';
  return bet.currency ? `${formatMinor(minor, currencyExponent(bet.currency))} ${bet.currency}` : String(minor);
}
