import { DomainError } from '../../errors/codes';
import { currencyExponent, decimalToMinor, decimalToMinorFloor, formatMinor } from '../../money/currency';
import type { OperatorSettings } from '../../operators/operator';
import { stockRacePayoutMinor } from './outcome';

/**
 * Default stake bounds for a currency without an operator entry, in minor units: at least 1 major
 * unit and never below 100 minor units (payouts are floored to the minor unit, and at 1-cent stakes
 * that floor costs a 95% game over 20 points of RTP; from 100 minor units up it costs under 0.2; see
 * docs/simulations.md), and up to 1000 times the minimum (1.00 .. 1000.00 EUR, 100 .. 100000 JPY).
 */
export function defaultStakeLimits(currency: string): { min: number; max: number } {
  const min = Math.max(10 ** currencyExponent(currency), 100);
  return { min, max: min * 1000 };
}

export function stakeLimits(settings: OperatorSettings, currency: string): { min: number; max: number } {
  return settings.stake_limits[currency] ?? defaultStakeLimits(currency);
}

/** A stake as integer minor units of the session's currency, or the reason it is refused. */
export function stakeToMinor(settings: OperatorSettings, currency: string, stake: number): number {
  const exponent = currencyExponent(currency);
  const { min, max } = stakeLimits(settings, currency);
  const range = `${formatMinor(min, exponent)} to ${formatMinor(max, exponent)} ${currency}`;
  if (!(stake > 0)) throw new DomainError('STAKE_OUT_OF_RANGE', `stake must be positive: ${range}`, { min, max });
  let minor: number;
  try {
    minor = decimalToMinor(stake, exponent);
  } catch (error) {
    if (error instanceof DomainError && error.code === 'STAKE_PRECISION') {
      throw new DomainError(
        'STAKE_PRECISION',
        `stake ${stake} has more decimals than ${currency} allows (${exponent})`,
        { max_decimals: exponent },
      );
    }
    throw new DomainError('STAKE_OUT_OF_RANGE', `stake ${stake} is out of range: ${range}`, { min, max });
  }
  if (minor < min || minor > max)
    throw new DomainError('STAKE_OUT_OF_RANGE', `stake ${stake} ${currency} is out of range: ${range}`, { min, max });
  return minor;
}

/**
 * The largest payout in minor units that every surface carries exactly: a JSON number holds any
 * decimal of at most 15 significant digits (minorToDecimal), and any safe integer when the currency
 * has no minor unit. The settings allow stake limits and caps up to 2^53 − 1, so without this
 * ceiling a cap or RTP raised after a big reservation made the round's close throw on every retry
 * (the payout could not be presented), holding every operator's bets of that round.
 */
function exactPayoutCeiling(exponent: number): number {
  return exponent === 0 ? Number.MAX_SAFE_INTEGER : 999_999_999_999_999;
}

/**
 * The per-bet payout cap in minor units: the currency's own (payout_limits), else the major-unit cap
 * converted. Never throws: it runs inside the transaction that closes a
 * round, where a misconfigured cap (more decimals than the currency) must not stop the round.
 */
export function payoutCapMinor(settings: OperatorSettings, currency: string): number {
  const own = settings.payout_limits[currency];
  if (own) return Math.min(own.max_payout, exactPayoutCeiling(currencyExponent(currency)));
  return capMinor(settings.stock_race.max_payout_major, currency);
}

/** The per-round cap in minor units of one currency (see prorateToRoundCap); never throws either. */
export function roundPayoutCapMinor(settings: OperatorSettings, currency: string): number {
  const own = settings.payout_limits[currency];
  if (own) return Math.min(own.max_payout_per_round, exactPayoutCeiling(currencyExponent(currency)));
  return capMinor(settings.stock_race.max_payout_per_round_major, currency);
}

/**
 * A cap in major units as minor units, rounded down exactly (a cap is "at most"): never by float
 * multiplication, which turned 377.84999999999997 EUR into 37785 cents, a cent over the cap.
 */
function capMinor(major: number, currency: string): number {
  const exponent = currencyExponent(currency);
  const ceiling = exactPayoutCeiling(exponent);
  try {
    const minor = decimalToMinorFloor(major, exponent);
    return minor > BigInt(ceiling) ? ceiling : Number(minor);
  } catch {
    // Settings the schema let through unchecked (edited by hand): no cap above the ceiling, none below 0.
    return major > 0 ? ceiling : 0;
  }
}

/**
 * What a k-of-N bet pays when its stock wins: the RTP formula, floored, then capped. Never throws
 * for a stored bet either: a product beyond the safe range is beyond the cap, so the bet pays the cap.
 */
export function winningPayoutMinor(
  settings: OperatorSettings,
  currency: string,
  stakeMinor: number,
  symbolCount: number,
  selectedCount: number,
): number {
  const cap = payoutCapMinor(settings, currency);
  let raw: number;
  try {
    raw = stockRacePayoutMinor(stakeMinor, symbolCount, selectedCount, settings.stock_race.rtp_bp);
  } catch (error) {
    // stockRacePayoutMinor refuses only a payout above 2^53 − 1 with this code, and the cap is below that.
    if (error instanceof DomainError && error.code === 'STAKE_OUT_OF_RANGE') return cap;
    throw error;
  }
  return Math.min(raw, cap);
}

/**
 * The winning payouts of one operator's bets in one currency in one round, lowered when their total
 * exceeds the operator's per-round cap: each winner gets floor(payout × cap / total), the same share
 * for all, so the total stays within the cap and no bet is favoured by the order it was reserved in.
 * What the floors leave (less than one minor unit per winner) stays with the operator. BigInt: a
 * payout times a cap can pass 2^53.
 */
export function prorateToRoundCap(payouts: readonly number[], cap: number): number[] {
  let total = 0n;
  for (const payout of payouts) total += BigInt(payout);
  if (total <= BigInt(cap)) return payouts.slice();
  return payouts.map((payout) => Number((BigInt(payout) * BigInt(cap)) / total));
}

/** Selections must be distinct symbols of the round, at least one, and not every stock (a sure win). */
export function checkSelection(selected: readonly string[], symbols: readonly string[]): void {
  if (selected.length === 0)
    throw new DomainError('INVALID_SELECTION', 'selected_stocks is empty: pick at least one stock');
  const seen = new Set<string>();
  for (const s of selected) {
    if (seen.has(s))
      throw new DomainError('INVALID_SELECTION', `selected_stocks lists ${s} more than once`, { symbol: s });
    seen.add(s);
  }
  const unknown = selected.filter((s) => !symbols.includes(s));
  if (unknown.length > 0) {
    throw new DomainError(
      'INVALID_SELECTION',
      `unknown stock symbol(s) ${unknown.join(', ')}; this round races ${symbols.join(', ')}`,
      {
        unknown,
        symbols,
      },
    );
  }
  if (selected.length >= symbols.length) {
    throw new DomainError(
      'INVALID_SELECTION',
      `selected_stocks names all ${symbols.length} stocks; leave at least one out`,
      { symbols },
    );
  }
}
