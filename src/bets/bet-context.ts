import type { OperatorModes } from '../operators/operator-mode';
import type { ComplianceHooks } from './compliance-hooks';

/**
 * What recording or settling a bet needs besides its transaction, handed down by whoever writes the
 * bet (a game, a command service) from the objects app.ts built: the compliance rules the bet's
 * transaction runs (noCompliance for a sandbox) and the app's OperatorModes, so a sandbox bet stays
 * out of the live metrics and its events carry livemode: false.
 */
export interface BetContext {
  compliance: ComplianceHooks;
  modes: OperatorModes;
}
