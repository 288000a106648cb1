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

/**
 * Lowest multiplier (hundredths) at which a bet of `amount` reaches `maxPayout`: its forced cash-out.
 * While `maxPayout * 100` is an exact double the division cannot round a fraction onto a whole
 * number (half an ulp of the quotient is under 1/amount), so the ceiling is exact; a larger cap (the
 * settings allow up to 2^53 - 1) was already rounded and could put the point one hundredth early,
 * below the cap, so it goes through BigInt. A point beyond the safe range is never reached.
 */
export function capMultiplier(amount: number, maxPayout: number): number {
  const scaled = maxPayout * 100;
  if (Number.isSafeInteger(scaled)) return Math.max(101, Math.ceil(scaled / amount));
  const stake = BigInt(amount);
  return Math.max(101, Number((BigInt(maxPayout) * 100n + stake - 1n) / stake));
}

/**
 * The per-bet cap a bet is paid under: the one stored with it when it was placed, or, for a bet placed
 * before caps were stored, the operator's current max_payout_per_bet.
 */
export function perBetCapOf(bet: { potentialPayout?: number | null }, maxPayoutPerBet: number): number {
  return bet.potentialPayout ?? maxPayoutPerBet;
}

/**
 * Where a bet leaves the round on its own: its auto cash-out target, or earlier the point at which
 * its payout would exceed the per-bet cap (bustabit's force cash-out).
 */
export function effectiveTarget(
  bet: { amount: number; autoCashout: number | null; potentialPayout?: number | null },
  maxPayoutPerBet: number,
): { at: number; kind: 'auto' | 'forced' } {
  const cap = capMultiplier(bet.amount, perBetCapOf(bet, maxPayoutPerBet));
  if (bet.autoCashout !== null && bet.autoCashout <= cap) return { at: bet.autoCashout, kind: 'auto' };
  return { at: cap, kind: 'forced' };
}

/** Where a bet leaves the round and why. */
export interface PlannedExit<B extends { amount: number }> {
  bet: B;
  at: number;
  kind: 'auto' | 'forced';
}

/** One operator's own exits in rising order, read one at a time (a list, or the engine's queue). */
export interface ExitCursor<B extends { amount: number }> {
  peek(): PlannedExit<B> | undefined;
  take(): void;
}

/**
 * What one operator has in a running round: the stake still in it, and what its bets that left
 * (cashed out, automatically or by hand) were paid. Its exposure at multiplier m is paid + open × m.
 */
export interface RoundExposure {
  open: number;
  paid: number;
}

/** One operator's caps, as its settings give them. */
export interface PayoutCaps {
  perBet: number;
  perRound: number;
}

/** The exposure once `exit` has left the round at its own point, paid as cashedOutBet pays it. */
export function afterExit(
  exposure: RoundExposure,
  exit: PlannedExit<{ amount: number; potentialPayout?: number | null }>,
  maxPayoutPerBet: number,
): RoundExposure {
  return {
    open: exposure.open - exit.bet.amount,
    paid: exposure.paid + cappedPayout(exit.bet.amount, exit.at, perBetCapOf(exit.bet, maxPayoutPerBet)),
  };
}

/**
 * The per-round cap's force point for one operator: the first multiplier (hundredths) at which what
 * the round already paid it plus the stake it still has open times the multiplier reaches its
 * max_payout_per_round. With the cap already spent (a cash-out by hand taken between the force
 * point and the tick that would have seen it), the lowest point a cash-out can have.
 */
export function roundForcePoint(exposure: RoundExposure, maxPayoutPerRound: number): number {
  if (exposure.open <= 0) return Number.POSITIVE_INFINITY;
  return capMultiplier(exposure.open, maxPayoutPerRound - exposure.paid);
}

/**
 * Walks one operator's own exits (auto targets and per-bet cap points, rising) up to the multiplier
 * `upTo`. An exit before the per-round force point is taken: its stake leaves the open exposure and
 * its payout joins what was paid, which moves the force point up (a bet that leaves at m pays no more
 * than it would have counted at m); the walk stops at the first exit past `upTo` or at the force
 * point, whichever comes first. `forcedAt` is the force point when the curve reached it by `upTo`:
 * every bet still in is cashed out there, wherever a tick happened to fall (bustabit's force cash-out).
 */
export function walkExits<B extends { amount: number; potentialPayout?: number | null }>(
  exits: ExitCursor<B>,
  exposure: RoundExposure,
  caps: PayoutCaps,
  upTo: number,
): { taken: PlannedExit<B>[]; forcedAt: number | null; exposure: RoundExposure } {
  const taken: PlannedExit<B>[] = [];
  let now = exposure;
  for (;;) {
    const force = roundForcePoint(now, caps.perRound);
    const next = exits.peek();
    if (next === undefined || next.at >= force || next.at > upTo) {
      return { taken, forcedAt: force <= upTo ? force : null, exposure: now };
    }
    taken.push(next);
    now = afterExit(now, next, caps.perBet);
    exits.take();
  }
}

export function cappedPayout(amount: number, multiplier: number, maxPayoutPerBet: number): number {
  return Math.min(payoutFor(amount, multiplier), maxPayoutPerBet);
}

/** The multiplier shown `elapsedMs` into the running phase, never past the crash point. */
export function liveMultiplier(elapsedMs: number, crashPoint: number): number {
  return Math.min(multiplierAt(Math.max(0, elapsedMs)), crashPoint);
}

/**
 * The bet as cashed out at `multiplier` (hundredths), its payout capped at its per-bet maximum (the
 * one stored with it; `maxPayoutPerBet` for a bet placed before that): the one builder of a
 * cashed-out bet, for cash-outs by hand and automatic ones alike.
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
    payout: cappedPayout(bet.amount, multiplier, perBetCapOf(bet, maxPayoutPerBet)),
    cashoutMultiplier: multiplier,
    cashoutKind: kind,
    settledAt: now,
  });
}
