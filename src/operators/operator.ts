import { type Static, type TSchema, Type } from 'typebox';
import { isKnownCurrency } from '../money/currency';

/*
 * Per-operator product settings: the schema below is the one definition of their shape and ranges.
 * The TypeScript type is derived from it, and every settings object is checked against it before it
 * is stored (./settings-check.ts), whoever writes it (CLI, services, tests). Unknown keys are refused
 * at every level. Money limits are integer minor units (Surface A: plain units).
 */
const exact = { additionalProperties: false } as const;
const MAX = Number.MAX_SAFE_INTEGER;
/** A count or amount in whole units: 0 <= n (or `min` <= n) <= 2^53 − 1. */
const Int = (minimum: number, description: string) => Type.Integer({ minimum, maximum: MAX, description });

const CurrencyCode = Type.Refine(
  Type.String({ pattern: '^[A-Z]{3}$', description: 'a known ISO 4217 currency code in upper case, e.g. "EUR"' }),
  (code) => isKnownCurrency(code),
  () => 'must be a known ISO 4217 currency code',
);

const StakeLimit = Type.Refine(
  Type.Object(
    {
      min: Int(0, 'an integer of minor units, at least 0'),
      max: Int(1, 'an integer of minor units, at least 1 and at least min'),
    },
    { ...exact, description: 'an object {min, max} of integer minor units with 0 <= min <= max and max >= 1' },
  ),
  (limit) => limit.max >= limit.min,
  () => 'must have max >= min',
);

const PayoutLimit = Type.Object(
  {
    max_payout: Int(1, 'a positive integer of minor units'),
    max_payout_per_round: Int(1, 'a positive integer of minor units'),
  },
  { ...exact, description: 'an object {max_payout, max_payout_per_round} of positive integer minor units' },
);

/** Limits keyed by known ISO 4217 code, each `entry` in integer minor units of that currency. */
function ByCurrency<T extends TSchema>(entry: T, shape: string, example: string) {
  return Type.Refine(
    Type.Record(Type.String({ pattern: '^[A-Z]{3}$' }), entry, {
      ...exact,
      description:
        `an object keyed by known ISO 4217 currency code, each ${shape} in integer minor units, ` + `e.g. ${example}`,
    }),
    (limits) => Object.keys(limits).every(isKnownCurrency),
    (limits) => `must be keyed by known ISO 4217 currency codes (unknown: ${unknownCodes(limits).join(', ')})`,
  );
}

export const OperatorSettingsSchema = Type.Object(
  {
    /** Currencies this operator may open Stock Race sessions in; with none, every session launch would fail. */
    currencies: Type.Array(CurrencyCode, {
      minItems: 1,
      uniqueItems: true,
      description: 'an array of one or more distinct known ISO 4217 currency codes in upper case, e.g. ["EUR","USD"]',
    }),
    /** Stake bounds per currency in minor units; a currency without an entry uses the game's defaults. */
    stake_limits: ByCurrency(StakeLimit, '{min, max}', '{"EUR":{"min":100,"max":100000}}'),
    /**
     * Stock Race payout caps per currency in minor units, for currencies whose major unit is far from
     * the others' (IDR, KWD): a currency with an entry uses it, one without uses stock_race's caps in
     * major units.
     */
    payout_limits: ByCurrency(
      PayoutLimit,
      '{max_payout, max_payout_per_round}',
      '{"IDR":{"max_payout":1000000000,"max_payout_per_round":5000000000}}',
    ),
    crash: Type.Object(
      {
        /** A single bet never pays more than this (Surface A units): the bet is force-cashed at that point. */
        max_payout_per_bet: Int(1, 'a positive integer (Surface A units)'),
        /** When the round's open exposure reaches this, every active bet of this operator is force-cashed. */
        max_payout_per_round: Int(1, 'a positive integer (Surface A units)'),
      },
      { ...exact, description: 'an object {max_payout_per_bet, max_payout_per_round}' },
    ),
    stock_race: Type.Object(
      {
        /** Return to player in basis points (9500 = 95%). */
        rtp_bp: Type.Integer({ minimum: 1, maximum: 10_000, description: 'an integer of basis points, 1 to 10000' }),
        /** Per-bet payout cap in major units of the bet's currency (unless payout_limits has the currency). */
        max_payout_major: Type.Number({
          exclusiveMinimum: 0,
          maximum: MAX,
          description: 'a positive number of major units of the bet currency',
        }),
        /**
         * What one round pays this operator's winners in one currency, at most (major units of that
         * currency): above it every winner of that currency is paid the same share of what it won.
         */
        max_payout_per_round_major: Type.Number({
          exclusiveMinimum: 0,
          maximum: MAX,
          description: 'a positive number of major units of each currency',
        }),
      },
      { ...exact, description: 'an object {rtp_bp, max_payout_major, max_payout_per_round_major}' },
    ),
    /** Overrides the service-wide token bucket for this operator's key; null uses the service's. */
    rate_limit: Type.Union(
      [
        Type.Null(),
        Type.Object(
          {
            refill_per_second: Type.Number({
              exclusiveMinimum: 0,
              maximum: MAX,
              description: 'a positive finite number of requests per second',
            }),
            burst: Int(1, 'a positive integer number of requests'),
          },
          exact,
        ),
      ],
      { description: 'null (the service default) or an object {refill_per_second, burst}' },
    ),
    /** Thresholds of the compliance rules; 0 switches a rule off. */
    compliance: Type.Object(
      {
        large_stake: Int(0, 'a non-negative integer amount in the units of the bet (0: rule off)'),
        large_payout: Int(0, 'a non-negative integer amount in the units of the bet (0: rule off)'),
        bets_per_minute_per_player: Int(0, 'a non-negative integer (0: rule off)'),
        /** Cash-outs this close (ms) to the same offset after the start, in a row, look automated. */
        machine_timing_window_ms: Int(0, 'a non-negative integer of milliseconds'),
        machine_timing_streak: Int(0, 'a non-negative integer (below 2: rule off)'),
        /** Distinct places (hashed client addresses) one player session may be used from within the window. */
        max_session_places: Int(0, 'a non-negative integer (0: rule off)'),
        session_places_window_ms: Int(1, 'a positive integer of milliseconds'),
      },
      {
        ...exact,
        description:
          'an object {large_stake, large_payout, bets_per_minute_per_player, machine_timing_window_ms, ' +
          'machine_timing_streak, max_session_places, session_places_window_ms}',
      },
    ),
  },
  {
    ...exact,
    description:
      'an object with currencies, stake_limits, payout_limits, crash, stock_race, rate_limit and compliance ' +
      '(no other keys)',
  },
);

export type OperatorSettings = Static<typeof OperatorSettingsSchema>;

/** The sections a patch merges field by field into the current settings; the others it replaces whole. */
export const MERGED_SECTIONS = ['crash', 'stock_race', 'compliance'] as const;
type MergedSection = (typeof MERGED_SECTIONS)[number];

/**
 * A change of settings: `crash`, `stock_race` and `compliance` change only the fields given;
 * `currencies`, `stake_limits`, `payout_limits` and `rate_limit` are replaced whole (`rate_limit: null` restores the
 * service default, `stake_limits: {}` the game's defaults).
 */
export type OperatorSettingsPatch = {
  [K in keyof OperatorSettings]?: K extends MergedSection ? Partial<OperatorSettings[K]> : OperatorSettings[K];
};

function unknownCodes(limits: Record<string, unknown>): string[] {
  return Object.keys(limits).filter((code) => !isKnownCurrency(code));
}

export const DEFAULT_OPERATOR_SETTINGS: OperatorSettings = {
  currencies: ['EUR', 'USD', 'GBP'],
  stake_limits: {},
  payout_limits: {},
  crash: { max_payout_per_bet: 10_000_000, max_payout_per_round: 100_000_000 },
  stock_race: { rtp_bp: 9500, max_payout_major: 100_000, max_payout_per_round_major: 1_000_000 },
  rate_limit: null,
  compliance: {
    large_stake: 500_000,
    large_payout: 5_000_000,
    bets_per_minute_per_player: 120,
    machine_timing_window_ms: 15,
    machine_timing_streak: 5,
    max_session_places: 1,
    session_places_window_ms: 600_000,
  },
};

export type OperatorStatus = 'active' | 'disabled';

/**
 * `test` operators live in the sandbox: their keys say so (pk_test_…, sk_test_…), their bets go to
 * rounds of their own, and nothing they do reaches live rounds, figures or flags. Fixed at creation.
 */
export type OperatorMode = 'live' | 'test';
export const OPERATOR_MODES: readonly OperatorMode[] = ['live', 'test'];

export interface Operator {
  id: string;
  name: string;
  apiKey: string;
  walletUrl: string | null;
  /**
   * Its Stock Race bets are settled by calls to its wallet: true once a wallet URL has been set.
   * A cleared URL pauses those calls (settlements stay pending); it does not make the operator
   * webhook-only, since its players' reserved stakes still wait for them.
   */
  settlesToWallet: boolean;
  status: OperatorStatus;
  mode: OperatorMode;
  settings: OperatorSettings;
  createdAt: number;
  previousSecretExpiresAt: number | null;
}

/** An operator with its usable secrets: current first, then the previous one while its overlap lasts. */
export interface OperatorCredentials extends Operator {
  secrets: string[];
}
