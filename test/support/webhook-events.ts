import type { CashedOutCrashBet } from '../../src/bets/bet';
import { betSettledEvent } from '../../src/bets/bet-events';
import type { DomainEvent } from '../../src/webhooks/domain-event';

/** A Crash bet cashed out at 2.00x, as the settlement path hands it to the event builder. */
export function settledCrashBet(overrides: Partial<CashedOutCrashBet> = {}): CashedOutCrashBet {
  return {
    id: 'bet_1',
    operatorId: 'op_1',
    game: 'crash',
    roundId: 'round_1',
    roundNumber: 7,
    player: 'player-1',
    sessionId: null,
    currency: null,
    amount: 100,
    autoCashout: null,
    selections: null,
    status: 'cashed_out',
    potentialPayout: null,
    payout: 200,
    cashoutMultiplier: 200,
    cashoutKind: 'manual',
    placedAt: 1_763_700_000_000,
    settledAt: 1_763_700_004_000,
    ...overrides,
  };
}

/** A valid bet.settled event for this operator, built by the service's own builder. */
export function betSettled(operatorId: string, overrides: Partial<CashedOutCrashBet> = {}): DomainEvent {
  return betSettledEvent(settledCrashBet({ operatorId, ...overrides }));
}
