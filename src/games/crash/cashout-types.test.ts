import { describe, expect, expectTypeOf, it } from 'vitest';
import type { CashedOutCrashBet, ReservedStockRaceBet } from '../../bets/bet';
import { noCompliance } from '../../bets/compliance-hooks';
import { OperatorModes } from '../../operators/operator-mode';
import type { SqlExecutor } from '../../store/database';
import { settleCashout } from './crash-bets';

const reserved: ReservedStockRaceBet = {
  id: 'bet_1',
  operatorId: 'op_1',
  game: 'stock_race',
  roundId: 'rnd_1',
  roundNumber: 7,
  player: 'p1',
  sessionId: 'ses_1',
  currency: 'EUR',
  amount: 100,
  autoCashout: null,
  selections: ['NVDA'],
  status: 'reserved',
  potentialPayout: 500,
  placedAt: 1_000,
};

// A well-typed context: the bet below must be the one thing the compiler objects to.
const writes = { compliance: noCompliance, modes: new OperatorModes() };

describe('cashing out, by type', () => {
  it('takes only an active Crash bet', () => {
    // The conditional UPDATE would match a reserved Stock Race bet just as well (`WHERE status = ?`):
    // only the type stops one from being "cashed out". tsc fails if this line stops being an error.
    // @ts-expect-error a Stock Race bet cannot be cashed out
    const cashOut = (tx: SqlExecutor) => settleCashout(tx, writes, reserved, 150, 'manual', 10_000, 2_000);
    expectTypeOf(cashOut).returns.resolves.toEqualTypeOf<CashedOutCrashBet>();
    expect(reserved.game).toBe('stock_race');
  });
});
