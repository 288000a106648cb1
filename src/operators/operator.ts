/** Per-operator product settings. Money limits are integer minor units (Surface A: plain units). */
export interface OperatorSettings {
  /** Currencies this operator may open Stock Race sessions in. */
  currencies: string[];
  /** Stake bounds per currency in minor units; a currency without an entry uses the defaults below. */
  stake_limits: Record<string, { min: number; max: number }>;
  crash: {
    /** A single bet never pays more than this (Surface A units): the bet is force-cashed at that point. */
    max_payout_per_bet: number;
    /** When the round's open exposure reaches this, every active bet of this operator is force-cashed. */
    max_payout_per_round: number;
  };
  stock_race: {
    /** Return to player in basis points (9500 = 95%). */
    rtp_bp: number;
    /** Per-bet payout cap in major units of the bet's currency. */
    max_payout_major: number;
  };
  /** Overrides the service-wide token bucket for this operator's key. */
  rate_limit: { refill_per_second: number; burst: number } | null;
  compliance: {
    large_stake: number;
    large_payout: number;
    bets_per_minute_per_player: number;
    /** Cash-outs this close (ms) to the same offset after the start, in a row, look automated. */
    machine_timing_window_ms: number;
    machine_timing_streak: number;
    /** Distinct places (hashed client addresses) one player session may be used from within the window. */
    max_session_places: number;
    session_places_window_ms: number;
  };
}

export const DEFAULT_OPERATOR_SETTINGS: OperatorSettings = {
  currencies: ['EUR', 'USD', 'GBP'],
  stake_limits: {},
  crash: { max_payout_per_bet: 10_000_000, max_payout_per_round: 100_000_000 },
  stock_race: { rtp_bp: 9500, max_payout_major: 100_000 },
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

export function mergeSettings(stored: Partial<OperatorSettings> | undefined): OperatorSettings {
  const s = stored ?? {};
  return {
    ...DEFAULT_OPERATOR_SETTINGS,
    ...s,
    crash: { ...DEFAULT_OPERATOR_SETTINGS.crash, ...(s.crash ?? {}) },
    stock_race: { ...DEFAULT_OPERATOR_SETTINGS.stock_race, ...(s.stock_race ?? {}) },
    compliance: { ...DEFAULT_OPERATOR_SETTINGS.compliance, ...(s.compliance ?? {}) },
  };
}
