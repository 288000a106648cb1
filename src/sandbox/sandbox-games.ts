import { randomBytes } from 'node:crypto';
import { betRepository } from '../bets/bet-repository';
import { CrashGame, type CrashGameOptions } from '../games/crash/crash-game';
import { sha256Hex, type ChainSeed } from '../games/engine/fair-chain';
import type { Game, OpenRound } from '../games/engine/round';
import { roundRepository } from '../games/engine/round-repository';
import { deriveStockRaceOutcome } from '../games/stock-race/outcome';
import { StockRaceGame, type StockRaceGameOptions } from '../games/stock-race/stock-race-game';
import type { SqlExecutor } from '../store/database';
import { sandboxRepository } from './sandbox-repository';
import type { SandboxTiming } from './sandbox-settings';

/**
 * Seeds of sandbox rounds: fresh random ones, outside every hash chain. Sandbox rounds are test data
 * and not part of the public fairness record, so they never consume a seed a live round could play.
 */
export const sandboxSeeds = {
  async ensureChain(): Promise<true> {
    return true;
  },
  async takeSeed(_tx: SqlExecutor, _game: Game): Promise<ChainSeed> {
    const seed = randomBytes(32).toString('hex');
    // No chain, no chain salt: the round uses the driver's own settings.
    const value = { chainId: 'sandbox', idx: 0, seed, seedHash: sha256Hex(seed), salt: null };
    return value;
  },
};

/** Round timing read on every use, so a change made through the sandbox API applies from the next round. */
export type TimingSource = () => SandboxTiming;

/**
 * The engine reads a driver's timing fields whenever it opens a round or pauses; the game classes
 * declare them as plain fields, so a sandbox driver replaces them with getters onto its timing.
 */
function liveTiming(target: object, fields: Record<string, () => number>): void {
  for (const [name, get] of Object.entries(fields))
    Object.defineProperty(target, name, { get, configurable: true, enumerable: true });
}

async function roundHasBets(tx: SqlExecutor, roundId: string): Promise<boolean> {
  return (await betRepository.byRound(tx, roundId)).length > 0;
}

/**
 * Crash in one operator's sandbox. When betting closes on a round that took a bet, the next
 * scripted crash point (if any) becomes the round's outcome; the round is then marked scripted.
 */
export class SandboxCrashGame extends CrashGame {
  constructor(
    o: CrashGameOptions,
    private readonly operatorId: string,
    timing: TimingSource,
  ) {
    super(o);
    liveTiming(this, {
      bettingWindowMs: () => timing().crash.betting_window_ms,
      pauseMs: () => timing().crash.pause_ms,
    });
  }

  async prepareRun(tx: SqlExecutor, round: OpenRound): Promise<OpenRound> {
    if (!(await roundHasBets(tx, round.id))) return round;
    const script = await sandboxRepository.takeScript(tx, this.operatorId, 'crash', round.id);
    if (!script || !('crash_point' in script)) return round;
    const scripted: OpenRound = {
      ...round,
      scripted: true,
      settings: { ...round.settings, scripted_crash_point: script.crash_point },
    };
    await roundRepository.markScripted(tx, scripted);
    return scripted;
  }
}

const SEED_SEARCH_LIMIT = 100_000;

/**
 * Stock Race in one operator's sandbox. A scripted winner is played by drawing seeds until one makes
 * that stock win: the race frames and the close then follow from the seed exactly as in a live round.
 */
export class SandboxStockRaceGame extends StockRaceGame {
  constructor(
    o: StockRaceGameOptions,
    private readonly operatorId: string,
    private readonly timing: TimingSource,
  ) {
    super(o);
    liveTiming(this, {
      bettingWindowMs: () => timing().stock_race.betting_window_ms,
      pauseMs: () => timing().stock_race.pause_ms,
    });
  }

  override roundSettings(): Record<string, unknown> {
    return { ...super.roundSettings(), race_ms: this.timing().stock_race.race_ms };
  }

  async prepareRun(tx: SqlExecutor, round: OpenRound): Promise<OpenRound> {
    if (!(await roundHasBets(tx, round.id))) return round;
    const script = await sandboxRepository.takeScript(tx, this.operatorId, 'stock_race', round.id);
    if (!script || !('winner' in script)) return round;
    const symbols = this.symbolsOf(round);
    if (!symbols.includes(script.winner)) return round;
    for (let i = 0; i < SEED_SEARCH_LIMIT; i++) {
      const seed = randomBytes(32).toString('hex');
      if (deriveStockRaceOutcome(seed, symbols).winner !== script.winner) continue;
      const scripted: OpenRound = {
        ...round,
        seed,
        seedHash: sha256Hex(seed),
        scripted: true,
        settings: { ...round.settings, scripted_winner: script.winner },
      };
      await roundRepository.markScripted(tx, scripted);
      return scripted;
    }
    return round;
  }
}
