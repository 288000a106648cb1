import { currencyExponent, minorToDecimal } from '../money/currency';
import type { DomainEvent } from '../webhooks/domain-event';
import type { BetSettledData } from '../webhooks/payloads';
import { type Bet, isSettled, type SettledBet } from './bet';

/** Money as each surface shows it: Surface A plain integers, Surface B decimals in the bet's currency. */
export function presentAmount(bet: Pick<Bet, 'currency'>, minor: number): number {
  return bet.currency ? minorToDecimal(minor, currencyExponent(bet.currency)) : minor;
}

/** The type already says so; this holds for callers the compiler does not see (plain JavaScript, JSON). */
function assertSettled(bet: Bet): asserts bet is SettledBet {
  if (!isSettled(bet)) throw new Error(`bet ${bet.id} is ${bet.status}: a bet.settled event needs a settled bet`);
}

/**
 * The `bet.settled` payload (v1); Stock Race adds the race's winner and its move. Only a settled bet
 * has the final status and the settlement time the payload promises.
 */
export function betSettledEvent(bet: SettledBet, race: Pick<BetSettledData, 'winner' | 'pct'> = {}): DomainEvent {
  assertSettled(bet);
  return {
    operatorId: bet.operatorId,
    type: 'bet.settled',
    data: {
      bet_id: bet.id,
      game: bet.game,
      round_id: bet.roundId,
      round_number: bet.roundNumber,
      player: bet.player,
      currency: bet.currency,
      amount: presentAmount(bet, bet.amount),
      status: bet.status,
      payout: presentAmount(bet, bet.payout),
      // Hundredths to the JSON number (250 -> 2.5), as crash/multiplier's formatMultiplier does; the
      // shared bet code does not import a game.
      multiplier: bet.cashoutMultiplier === null ? null : minorToDecimal(bet.cashoutMultiplier, 2),
      cashout_kind: bet.cashoutKind,
      selections: bet.selections,
      settled_at: bet.settledAt,
      ...race,
    },
  };
}
