import { type ClosedRound, isFinal, type Round } from './round';

/**
 * The public shape of a round (v1), the same in API responses, the live feed and webhook payloads.
 * The seed and the outcome appear only once the round is final: before that only the commitment.
 */
/** A final round's outcome as published (the round.closed payload: src/webhooks/payloads.ts). */
export type OutcomeJson =
  | { crash_point: number }
  | { winner: string; pct: number; stocks: { symbol: string; pct: number }[] };

export interface RoundJson {
  round_id: string;
  round_number: number;
  game: Round['game'];
  status: Round['status'];
  seed_hash: string;
  seed: string | null;
  opened_at: number;
  betting_closes_at: number;
  running_at: number | null;
  closed_at: number | null;
  voided_at: number | null;
  void_reason: string | null;
  outcome: OutcomeJson | null;
  /** false: a sandbox round of a test-mode operator (test data). */
  livemode: boolean;
  /** Sandbox rounds only: true when the operator scripted the outcome (outside the provably-fair record). */
  scripted?: boolean;
  multiplier?: number;
}

/**
 * A closed round's outcome as its game shows it (a crash point, a race's moves). Each game supplies
 * its own: the engine knows a game only through its driver.
 */
export type OutcomePresenter = (round: ClosedRound) => OutcomeJson;

/** The round's public shape, its outcome presented by its game. */
export function presentRoundAs(round: Round, presentOutcome: OutcomePresenter): RoundJson {
  const final = isFinal(round.status);
  return {
    round_id: round.id,
    round_number: round.roundNumber,
    game: round.game,
    status: round.status,
    seed_hash: round.seedHash,
    seed: final ? round.seed : null,
    opened_at: round.openedAt,
    betting_closes_at: round.bettingClosesAt,
    running_at: round.runningAt,
    closed_at: round.closedAt,
    voided_at: round.voidedAt,
    void_reason: round.voidReason,
    outcome: round.status === 'closed' ? presentOutcome(round) : null,
    livemode: round.operatorId === null,
    ...(round.operatorId === null ? {} : { scripted: round.scripted }),
  };
}

/**
 * A round with its game's own fields (Stock Race: symbols, race_ms): the read endpoints' object and
 * the round.opened / round.closed payload (v1), one function for both.
 */
export const presentRoundWith = <F extends object>(
  round: Round,
  presentOutcome: OutcomePresenter,
  gameFields: F,
): RoundJson & F =>
  // Per round read: the game's fields are added to the fresh object, not spread (docs/decisions.md).
  Object.assign(presentRoundAs(round, presentOutcome), gameFields);
