import { type ActiveCrashBet, type CashedOutCrashBet, type CashoutKind, placementOf } from '../../bets/bet';
import { crashPointFromHash } from './fairness';
import { multiplierAt, payoutFor } from './multiplier';

/** The round's crash point (hundredths) from its seed; memoised because cash-outs ask for it often. */
const memo = new Map<string, number>();
export function crashPointOf(seed: string, salt: string, houseEdgeBp: number): number {
  const key = `${seed}:${salt}:${houseEdgeBp}`;
  let value = memo.get(key);
  if (value === undefined) {
    value = crashPointFromHash(seed, salt, houseEdgeBp);
    if (memo.size > 1000) memo.clear();
    memo.set(key, value);
  }
  return value;
}

/**
 * The crash point a sandbox operator scripted for one of its own rounds (hundredths), or null. Only a
 * sandbox round (operatorId set) can carry one: a live round's outcome always comes from its seed.
 */
export function scriptedCrashPoint(round: {
  operatorId: string | null;
  settings: Record<string, unknown>;
}): number | null {
  const scripted = round.settings.scripted_crash_point;
  if (round.operatorId === null || !Number.isSafeInteger(scripted)) return null;
  return (scripted as number) >= 100 ? (scripted as number) : null;
}

/** Lowest multiplier (hundredths) at which a bet of `amount` reaches `maxPayout`: its forced cash-out. */
export function capMultiplier(amount: number, maxPayout: number): number {
  return Math.max(101, Math.ceil((maxPayout * 100) / amount));
}

/**
 * Where a bet leaves the round on its own: its auto cash-out target, or earlier the point at which
 * its payout would exceed the per-bet cap (bustabit's force cash-out).
 */
export function effectiveTarget(
  bet: { amount: number; autoCashout: number | null },
  maxPayoutPerBet: number,
): { at: number; kind: 'auto' | 'forced' } {
  const cap = capMultiplier(bet.amount, maxPayoutPerBet);
  if (bet.autoCashout !== null && bet.autoCashout <= cap) return { at: bet.autoCashout, kind: 'auto' };
  return { at: cap, kind: 'forced' };
}

export function cappedPayout(amount: number, multiplier: number, maxPayoutPerBet: number): number {
  return Math.min(payoutFor(amount, multiplier), maxPayoutPerBet);
}

/** The multiplier shown `elapsedMs` into the running phase, never past the crash point. */
export function liveMultiplier(elapsedMs: number, crashPoint: number): number {
  return Math.min(multiplierAt(Math.max(0, elapsedMs)), crashPoint);
}

/**
 * The bet as cashed out at `multiplier` (hundredths), its payout capped at the operator's per-bet
 * maximum: the one builder of a cashed-out bet, for cash-outs by hand and automatic ones alike.
 */
export function cashedOutBet(
  bet: ActiveCrashBet,
  multiplier: number,
  kind: CashoutKind,
  maxPayoutPerBet: number,
  now: number,
): CashedOutCrashBet {
  return Object.assign(placementOf(bet), {
    status: 'cashed_out' as const,
    payout: cappedPayout(bet.amount, multiplier, maxPayoutPerBet),
    cashoutMultiplier: multiplier,
    cashoutKind: kind,
    settledAt: now,
  });
}
