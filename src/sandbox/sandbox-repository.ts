import { randomUUID } from 'node:crypto';
import type { Config } from '../config/config';
import type { Game } from '../games/engine/round';
import type { Database, SqlExecutor } from '../store/database';

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

const NO_FAILURE: SandboxWalletSwitch = { failure: 'none', remaining: null };

/** Storage of everything a sandbox operator can set: scripts, timing, the simulated wallet. */
export const sandboxStore = {
  async settings(
    db: SqlExecutor,
    operatorId: string,
    config: Config,
  ): Promise<{ timing: SandboxTiming; wallet: SandboxWalletSwitch }> {
    const row = await db.get<{ timing: string; wallet: string }>(
      'SELECT timing, wallet FROM sandbox_settings WHERE operator_id = ?',
      [operatorId],
    );
    const base = defaultTiming(config);
    if (!row) return { timing: base, wallet: NO_FAILURE };
    const stored = JSON.parse(row.timing) as Partial<SandboxTiming>;
    return {
      timing: {
        crash: { ...base.crash, ...(stored.crash ?? {}) },
        stock_race: { ...base.stock_race, ...(stored.stock_race ?? {}) },
      },
      wallet: { ...NO_FAILURE, ...(JSON.parse(row.wallet) as Partial<SandboxWalletSwitch>) },
    };
  },

  async saveSettings(
    tx: SqlExecutor,
    operatorId: string,
    value: { timing: SandboxTiming; wallet: SandboxWalletSwitch },
    now: number,
  ): Promise<void> {
    await tx.run(
      `INSERT INTO sandbox_settings (operator_id, timing, wallet, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (operator_id) DO UPDATE SET timing = excluded.timing, wallet = excluded.wallet,
         updated_at = excluded.updated_at`,
      [operatorId, JSON.stringify(value.timing), JSON.stringify(value.wallet), now],
    );
  },

  /** Queues outcomes after any already queued. */
  async enqueueScripts(
    db: Database,
    operatorId: string,
    game: Game,
    outcomes: ScriptedOutcome[],
    now: number,
  ): Promise<SandboxScript[]> {
    return db.transaction(async (tx) => {
      const last = await tx.get<{ n: number | null }>(
        'SELECT MAX(seq) AS n FROM sandbox_scripts WHERE operator_id = ? AND game = ?',
        [operatorId, game],
      );
      let seq = Number(last?.n ?? 0);
      const out: SandboxScript[] = [];
      for (const outcome of outcomes) {
        const id = `scr_${randomUUID()}`;
        await tx.run(
          'INSERT INTO sandbox_scripts (id, operator_id, game, outcome, created_at, seq) VALUES (?, ?, ?, ?, ?, ?)',
          [id, operatorId, game, JSON.stringify(outcome), now, ++seq],
        );
        out.push({ id, game, outcome, createdAt: now });
      }
      return out;
    });
  },

  async pendingScripts(db: SqlExecutor, operatorId: string, game: Game): Promise<SandboxScript[]> {
    const rows = await db.all<{ id: string; game: Game; outcome: string; created_at: number }>(
      `SELECT id, game, outcome, created_at FROM sandbox_scripts
       WHERE operator_id = ? AND game = ? AND used_by_round IS NULL ORDER BY seq`,
      [operatorId, game],
    );
    return rows.map((r) => ({
      id: r.id,
      game: r.game,
      outcome: JSON.parse(r.outcome) as ScriptedOutcome,
      createdAt: Number(r.created_at),
    }));
  },

  async clearScripts(db: Database, operatorId: string, game: Game): Promise<number> {
    const r = await db.transaction((tx) =>
      tx.run('DELETE FROM sandbox_scripts WHERE operator_id = ? AND game = ? AND used_by_round IS NULL', [
        operatorId,
        game,
      ]),
    );
    return r.changes;
  },

  /** Inside the transaction that closes betting: takes the next queued outcome for this round. */
  async takeScript(tx: SqlExecutor, operatorId: string, game: Game, roundId: string): Promise<ScriptedOutcome | null> {
    const row = await tx.get<{ id: string; outcome: string }>(
      `SELECT id, outcome FROM sandbox_scripts
       WHERE operator_id = ? AND game = ? AND used_by_round IS NULL ORDER BY seq LIMIT 1`,
      [operatorId, game],
    );
    if (!row) return null;
    const r = await tx.run('UPDATE sandbox_scripts SET used_by_round = ? WHERE id = ? AND used_by_round IS NULL', [
      roundId,
      row.id,
    ]);
    return r.changes === 1 ? (JSON.parse(row.outcome) as ScriptedOutcome) : null;
  },
};
