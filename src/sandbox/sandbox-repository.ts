import { randomUUID } from 'node:crypto';
import type { Config } from '../config/config';
import type { Game } from '../games/engine/round';
import type { Database, SqlExecutor } from '../store/database';
import type { Settlement } from '../wallet/settlements';
import {
  defaultTiming,
  type SandboxBalance,
  type SandboxScript,
  type SandboxTiming,
  type SandboxWalletSwitch,
  type ScriptedOutcome,
} from './sandbox-settings';

const NO_FAILURE: SandboxWalletSwitch = { failure: 'none', remaining: null };

/** Storage of everything a sandbox operator can set: scripts, timing, the simulated wallet. */
export const sandboxRepository = {
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
    tx: SqlExecutor,
    operatorId: string,
    game: Game,
    outcomes: ScriptedOutcome[],
    now: number,
  ): Promise<SandboxScript[]> {
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

  /** Sets one player's simulated balance in one currency, whatever it was. */
  async setBalance(tx: SqlExecutor, operatorId: string, b: SandboxBalance, now: number): Promise<void> {
    await tx.run(
      `INSERT INTO sandbox_wallet_balances (operator_id, player_ref, currency, balance, updated_at)
         VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (operator_id, player_ref, currency)
         DO UPDATE SET balance = excluded.balance, updated_at = excluded.updated_at`,
      [operatorId, b.player_ref, b.currency, b.balance, now],
    );
  },

  async balances(db: SqlExecutor, operatorId: string, playerRef: string): Promise<SandboxBalance[]> {
    const rows = await db.all<{ player_ref: string; currency: string; balance: number }>(
      `SELECT player_ref, currency, balance FROM sandbox_wallet_balances
       WHERE operator_id = ? AND player_ref = ? ORDER BY currency`,
      [operatorId, playerRef],
    );
    return rows.map((r) => ({ player_ref: r.player_ref, currency: r.currency, balance: Number(r.balance) }));
  },

  /**
   * Takes `amount` from the balance if it covers it; false (nothing taken) if it does not. The debit of
   * a bet is written to the wallet's ledger too (`debit_<bet_id>`), so a settle knows the stake it returns
   * is one this wallet holds (see stakeHeldElsewhere).
   */
  async debit(
    tx: SqlExecutor,
    operatorId: string,
    playerRef: string,
    currency: string,
    amount: number,
    now: number,
    betId?: string,
  ): Promise<boolean> {
    const r = await tx.run(
      `UPDATE sandbox_wallet_balances SET balance = balance - ?, updated_at = ?
       WHERE operator_id = ? AND player_ref = ? AND currency = ? AND balance >= ?`,
      [amount, now, operatorId, playerRef, currency, amount],
    );
    if (r.changes !== 1) return false;
    if (betId !== undefined) {
      await tx.run(
        `INSERT INTO sandbox_wallet_settles (operator_id, idempotency_key, bet_id, credited, applied_at)
         VALUES (?, ?, ?, ?, ?)`,
        [operatorId, `debit_${betId}`, betId, -amount, now],
      );
    }
    return true;
  },

  /**
   * Whether the bet's stake was held by the operator's own wallet, not this one: the simulated wallet
   * never debited it, and the operator has had a wallet_url (it reserved against that wallet, whose URL
   * was cleared since). Such a settlement is not this wallet's to credit. Bets debited before debits were
   * recorded belong to operators that never had a wallet_url, so they still settle here.
   */
  async stakeHeldElsewhere(tx: SqlExecutor, s: Settlement): Promise<boolean> {
    const debited = await tx.get<{ n: number }>(
      'SELECT 1 AS n FROM sandbox_wallet_settles WHERE operator_id = ? AND idempotency_key = ?',
      [s.operatorId, `debit_${s.betId}`],
    );
    if (debited) return false;
    const operator = await tx.get<{ settles_to_wallet: number }>(
      'SELECT settles_to_wallet FROM operators WHERE id = ?',
      [s.operatorId],
    );
    return Number(operator?.settles_to_wallet ?? 0) === 1;
  },

  /** Credits the bet's payout unless this idempotency key was applied before; returns the balance after. */
  async applySettleOnce(tx: SqlExecutor, s: Settlement, now: number): Promise<number | null> {
    const bet = await tx.get<{ player: string; currency: string; payout: number | null }>(
      'SELECT player, currency, payout FROM bets WHERE id = ?',
      [s.betId],
    );
    if (!bet) return null;
    const credited = Number(bet.payout ?? 0);
    const first = await tx.run(
      `INSERT INTO sandbox_wallet_settles (operator_id, idempotency_key, bet_id, credited, applied_at)
     VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
      [s.operatorId, s.idempotencyKey, s.betId, credited, now],
    );
    if (first.changes === 1) {
      await tx.run(
        `INSERT INTO sandbox_wallet_balances (operator_id, player_ref, currency, balance, updated_at)
       VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (operator_id, player_ref, currency)
       DO UPDATE SET balance = sandbox_wallet_balances.balance + excluded.balance,
         updated_at = excluded.updated_at`,
        [s.operatorId, bet.player, bet.currency, credited, now],
      );
    }
    const row = await tx.get<{ balance: number }>(
      'SELECT balance FROM sandbox_wallet_balances WHERE operator_id = ? AND player_ref = ? AND currency = ?',
      [s.operatorId, bet.player, bet.currency],
    );
    return row ? Number(row.balance) : null;
  },
};
