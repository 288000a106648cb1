import type { Clock } from '../clock/clock';
import type { Config } from '../config/config';
import { formatMultiplier } from '../games/crash/multiplier';
import { crashOutcomeOf, type Game } from '../games/engine/round';
import { roundRepository } from '../games/engine/round-repository';
import { currencyExponent, formatMinor, money } from '../money/currency';
import type { Operator } from '../operators/operator';
import type { Database } from '../store/database';
import { reportRepository, type AttentionCounts } from './report-repository';

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
  /**
   * The exact sums as integer strings, in minor units (Stock Race) or plain units (Crash): a JSON
   * number cannot carry a sum past 2^53 exactly.
   */
  staked: string;
  paid: string;
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

export type Overview = AttentionCounts;

/**
 * Percent with two decimals, rounded half up, from exact integer sums: the hundredths of a percent are
 * found in bigint arithmetic (paid × 10,000 can pass 2^53 long before the sums do); only the final
 * scaling to a JSON number, for display, is a floating step. Callers pass staked > 0.
 */
function percent(paid: bigint, staked: bigint): number {
  const hundredths = (paid * 20_000n + staked) / (staked * 2n);
  return Number(hundredths) / 100;
}

/** A sum as the bets' surface shows money ("12.50 EUR", or plain units), exact for any size. */
const moneyExact = (holder: { currency: string | null }, sum: bigint): string =>
  holder.currency ? `${formatMinor(sum, currencyExponent(holder.currency))} ${holder.currency}` : sum.toString();

/** Configured return to player, in percent: Crash from the house edge, Stock Race from the operator's setting. */
export function configuredRtp(game: Game, config: Config, operator: Operator): number {
  return game === 'crash' ? (10_000 - config.crash.houseEdgeBp) / 100 : operator.settings.stock_race.rtp_bp / 100;
}

/** The partner dashboard's figures for one operator: charts, totals and what needs attention. Reads only. */
export class OperatorReports {
  constructor(
    private readonly db: Database,
    private readonly config: Config,
    private readonly clock: Pick<Clock, 'now'>,
  ) {}

  async liveStats(operator: Operator): Promise<LiveStats> {
    // A sandbox operator's charts show its own rounds; everyone else's the live ones.
    const scope = operator.mode === 'test' ? operator.id : null;
    const closed = await roundRepository.recentlyClosed(this.db, 'crash', 60, scope);
    const crash_points = closed
      .map((r) => ({
        round_number: r.roundNumber,
        crash_point: formatMultiplier(crashOutcomeOf(r).crash_point),
      }))
      .reverse();

    const totals: RtpTotal[] = (await reportRepository.settledTotals(this.db, operator.id)).map((r) => ({
      game: r.game,
      currency: r.currency,
      bets: r.bets,
      staked: r.staked.toString(),
      paid: r.paid.toString(),
      rtp: r.staked > 0n ? percent(r.paid, r.staked) : null,
      staked_text: moneyExact(r, r.staked),
      paid_text: moneyExact(r, r.paid),
    }));

    // One line per game: Crash amounts are plain units; Stock Race follows the currency staked most,
    // since a ratio across currencies of different minor units would mean nothing.
    const rtp: RtpSeries[] = [];
    for (const game of ['crash', 'stock_race'] as const) {
      const main = totals.filter((t) => t.game === game).sort((a, b) => b.bets - a.bets)[0];
      const currency = main?.currency ?? null;
      const rounds = await reportRepository.settledByRound(this.db, {
        operatorId: operator.id,
        game,
        currency,
        limit: 100,
      });
      let staked = 0n;
      let paid = 0n;
      const points: RtpPoint[] = [];
      for (const r of rounds) {
        staked += r.staked;
        paid += r.paid;
        if (staked > 0n) points.push({ round_number: r.round_number, rtp: percent(paid, staked) });
      }
      rtp.push({ game, currency, configured: configuredRtp(game, this.config, operator), points });
    }
    return { crash_points, rtp, totals };
  }

  /**
   * What each settle call pays, as the bets page shows it ("19.50 EUR"): the call's own body has a
   * bare decimal ("19.5") that says neither the currency nor its minor units. Keyed by bet id.
   */
  async settlementPayouts(operatorId: string, betIds: readonly string[]): Promise<Map<string, string>> {
    const rows = await reportRepository.betPayouts(this.db, operatorId, betIds);
    return new Map(rows.map((r) => [r.id, money(r, r.payout)]));
  }

  /** Settle calls not confirmed, dead webhook deliveries, open (unacknowledged) flags of the last day, endpoints. */
  overview(operatorId: string): Promise<Overview> {
    return reportRepository.attention(this.db, operatorId, this.clock.now() - 86_400_000);
  }
}
