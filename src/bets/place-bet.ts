import { afterCommit } from '../observability/instrumented-db';
import type { SqlExecutor } from '../store/database';
import type { ActiveCrashBet, OpenBet, ReservedStockRaceBet } from './bet';
import { timeOrderedId } from '../ids/time-ordered-id';
import type { BetContext } from './bet-context';
import { betRepository } from './bet-repository';

/** What a game decides about a new bet; the rest (id, placement time) is the same for all. */
export type NewCrashBet = Omit<ActiveCrashBet, 'id' | 'placedAt'>;
export type NewStockRaceBet = Omit<ReservedStockRaceBet, 'id' | 'placedAt'>;
export type NewBet = NewCrashBet | NewStockRaceBet;

/** Writes a bet accepted by its game, with the compliance rules, inside the caller's transaction. */
export async function recordPlacedBet(
  tx: SqlExecutor,
  ctx: BetContext,
  fields: NewCrashBet,
  now: number,
): Promise<ActiveCrashBet>;
export async function recordPlacedBet(
  tx: SqlExecutor,
  ctx: BetContext,
  fields: NewStockRaceBet,
  now: number,
): Promise<ReservedStockRaceBet>;
export async function recordPlacedBet(tx: SqlExecutor, ctx: BetContext, fields: NewBet, now: number): Promise<OpenBet> {
  // Per bet: `fields` copied with Object.assign, not a spread (see docs/decisions.md, the spread rule).
  const bet: OpenBet = Object.assign({}, fields, { id: timeOrderedId(now), placedAt: now });
  await betRepository.insert(tx, bet);
  await ctx.compliance.betPlaced(tx, bet, now);
  // Sandbox bets are test data: live metrics never count them.
  if (!(await ctx.modes.isTest(tx, bet.operatorId))) afterCommit(tx, (m) => m.betPlaced(bet.game));
  return bet;
}
