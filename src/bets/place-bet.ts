import type { ComplianceHooks } from './compliance-hooks';
import { afterCommit } from '../observability/instrumented-db';
import { isTestOperator } from '../operators/operator-mode';
import type { SqlExecutor } from '../store/database';
import type { Bet } from './bet';
import { newBetId } from './bet-id';
import { betRepository } from './bet-repository';

/** What a game decides about a new bet; the rest (id, times, an empty result) is the same for all. */
export type NewBet = Omit<Bet, 'id' | 'payout' | 'cashoutMultiplier' | 'cashoutKind' | 'placedAt' | 'settledAt'>;

/** Writes a bet accepted by its game, with the compliance rules, inside the caller's transaction. */
export async function recordPlacedBet(tx: SqlExecutor, compliance: ComplianceHooks, fields: NewBet, now: number): Promise<Bet> {
  const bet: Bet = { ...fields, id: newBetId(now), payout: null, cashoutMultiplier: null, cashoutKind: null, placedAt: now, settledAt: null };
  await betRepository.insert(tx, bet);
  await compliance.betPlaced(tx, bet, now);
  // Sandbox bets are test data: live metrics never count them.
  if (!(await isTestOperator(tx, bet.operatorId))) afterCommit(tx, (m) => m.betPlaced(bet.game));
  return bet;
}
