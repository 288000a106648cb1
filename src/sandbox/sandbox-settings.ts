import type { Config } from '../config/config';
import type { Game } from '../games/engine/round';

/** Round timing of one sandbox, per game (ms). A change applies from the next round. */
export interface SandboxTiming {
  crash: { betting_window_ms: number; pause_ms: number };
  stock_race: { betting_window_ms: number; race_ms: number; pause_ms: number };
}

/**
 * The simulated wallet's failure switch: the next `remaining` settle calls (all of them while
 * `remaining` is null) time out (applied, but the answer is lost) or fail with a 500 (not applied).
 */
export interface SandboxWalletSwitch {
  failure: 'none' | 'timeout' | 'error_500';
  remaining: number | null;
}

export type ScriptedOutcome = { crash_point: number } | { winner: string };

export interface SandboxScript {
  id: string;
  game: Game;
  outcome: ScriptedOutcome;
  createdAt: number;
}

export const defaultTiming = (config: Config): SandboxTiming => ({
  crash: { betting_window_ms: config.crash.bettingWindowMs, pause_ms: config.crash.pauseMs },
  stock_race: {
    betting_window_ms: config.stockRace.bettingWindowMs,
    race_ms: config.stockRace.raceMs,
    pause_ms: config.stockRace.pauseMs,
  },
});

/** A simulated wallet's balance of one player in one currency. */
export interface SandboxBalance {
  player_ref: string;
  currency: string;
  /** Minor units. */
  balance: number;
}
