import { presentCrashOutcome } from './crash/multiplier';
import type { ClosedRound, Round } from './engine/round';
import { type OutcomeJson, presentRoundAs, type RoundJson } from './engine/round-presenter';
import { presentStockRaceOutcome } from './stock-race/outcome';

/**
 * A round of any game in its public shape (v1), for readers that hold a round but not its game's
 * engine: read endpoints, the dashboard, the sandbox. It sits above the games because it knows them
 * all; the engine itself presents a round through its game's driver.
 */
export function presentRound(round: Round): RoundJson {
  return presentRoundAs(round, presentOutcome);
}

function presentOutcome(round: ClosedRound): OutcomeJson {
  return round.game === 'crash' ? presentCrashOutcome(round.outcome) : presentStockRaceOutcome(round.outcome);
}
