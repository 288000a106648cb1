import type { Bet, SettledBet } from './bet';
import type { SqlExecutor } from '../store/database';

/**
 * Compliance rules run inside the transaction that places or settles a bet, so a raised flag (and
 * its compliance.flag event) commits with the change that raised it. They must never throw for a
 * rule hit: a flag is an observation, not a refusal. Declared here, beside the bet code that calls
 * them; compliance/ implements them and app.ts passes that in, so bets and games do not import compliance.
 */
export interface ComplianceHooks {
  betPlaced(tx: SqlExecutor, bet: Bet, now: number): Promise<void>;
  betSettled(tx: SqlExecutor, bet: SettledBet, now: number): Promise<void>;
}

export const noCompliance: ComplianceHooks = {
  betPlaced: async () => {},
  betSettled: async () => {},
};
