/**
 * The compliance rules as pure decisions over numbers the service already has. A threshold of 0
 * switches a rule off. Amounts are compared in the bet's stored units: plain integers on Surface A,
 * minor units of the bet's currency on Surface B.
 */
import type { OperatorSettings } from '../operators/operator';

export type ComplianceSettings = OperatorSettings['compliance'] & {
  /** Distinct places one player session may be used from within the window before a flag. */
  max_session_places?: number;
  session_places_window_ms?: number;
};

export const VELOCITY_WINDOW_MS = 60_000;
/** How far back the cash-out timing rule looks for a streak. */
export const MACHINE_TIMING_HORIZON_MS = 3_600_000;
export const DEFAULT_MAX_SESSION_PLACES = 1;
export const DEFAULT_SESSION_PLACES_WINDOW_MS = 600_000;
/**
 * The largest count the one-unit commands can hand PostgreSQL (its functions take `integer`s). The
 * settings allow counts up to 2^53 - 1; a bigger one reached the store as is and failed every bet
 * (velocity) or cash-out (streak) of the operator with a 500. No player reaches 2^31 - 1 bets in a
 * minute or manual cash-outs in an hour, so a count above it means the same as it.
 */
export const MAX_STORE_COUNT = 2_147_483_647;

export function largeStake(amount: number, c: ComplianceSettings): Record<string, unknown> | null {
  if (!(c.large_stake > 0) || amount < c.large_stake) return null;
  return { amount, threshold: c.large_stake };
}

/** Voided bets return the stake: that is not a payout worth flagging. */
export function largePayout(
  status: string,
  payout: number | null,
  c: ComplianceSettings,
): Record<string, unknown> | null {
  if (!(c.large_payout > 0) || status === 'void' || payout === null || payout < c.large_payout) return null;
  return { payout, threshold: c.large_payout };
}

/** `betsInWindow` counts the bet just placed. */
export function betVelocity(betsInWindow: number, c: ComplianceSettings): Record<string, unknown> | null {
  if (!(c.bets_per_minute_per_player > 0) || betsInWindow <= c.bets_per_minute_per_player) return null;
  return { bets_in_last_minute: betsInWindow, threshold: c.bets_per_minute_per_player, window_ms: VELOCITY_WINDOW_MS };
}

export interface TimedCashout {
  betId: string;
  /** Milliseconds between the round starting to run and the cash-out. */
  elapsedMs: number;
}

/**
 * `recent` are the player's latest manual cash-outs, newest first. A person cannot hit the same
 * millisecond offset round after round; a script can. Flags when the newest `streak` of them all
 * fall within `window` ms of each other.
 */
export function machineTiming(recent: readonly TimedCashout[], c: ComplianceSettings): Record<string, unknown> | null {
  const streak = Math.floor(c.machine_timing_streak);
  if (!(streak >= 2) || !(c.machine_timing_window_ms >= 0) || recent.length < streak) return null;
  const run = recent.slice(0, streak);
  const times = run.map((r) => r.elapsedMs);
  const spread = Math.max(...times) - Math.min(...times);
  if (spread > c.machine_timing_window_ms) return null;
  return {
    streak,
    window_ms: c.machine_timing_window_ms,
    spread_ms: spread,
    elapsed_ms: times,
    bet_ids: run.map((r) => r.betId),
  };
}

/** `places` counts the distinct places that used the session within the window, including this one. */
export function sessionPlaces(places: number, c: ComplianceSettings): Record<string, unknown> | null {
  const max = c.max_session_places ?? DEFAULT_MAX_SESSION_PLACES;
  if (!(max > 0) || places <= max) return null;
  return { places, threshold: max, window_ms: c.session_places_window_ms ?? DEFAULT_SESSION_PLACES_WINDOW_MS };
}

/** The bet-velocity rule as the store applies it; null when the rule is off (or for sandbox operators). */
export function velocityRule(rules: ComplianceSettings | null, now: number): { limit: number; since: number } | null {
  // Capped for the store: a bet over the cap only takes the full path, which applies the exact threshold.
  return rules && rules.bets_per_minute_per_player > 0
    ? { limit: Math.min(rules.bets_per_minute_per_player, MAX_STORE_COUNT), since: now - VELOCITY_WINDOW_MS }
    : null;
}
