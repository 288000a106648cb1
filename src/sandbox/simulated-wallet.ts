import { DomainError } from '../errors/codes';
import type { Config } from '../config/config';
import type { Database, SqlExecutor } from '../store/database';
import type { AttemptResult, Settlement } from '../wallet/settlements';
import { sandboxStore } from './sandbox-store';

export type SimulatedAnswer = Omit<AttemptResult, 'startedAt' | 'latencyMs'>;

export interface SandboxBalance {
  player_ref: string;
  currency: string;
  /** Minor units. */
  balance: number;
}

/**
 * The wallet a sandbox operator without a wallet_url plays against: a balance per player and
 * currency, debited when a bet is reserved and credited by the settle calls of the wallet outbox,
 * which reaches it instead of an HTTP wallet and is retried exactly the same way. Its failure
 * switch makes the next settle calls time out (the credit is applied but the answer is lost, the
 * "outcome unknown" case) or fail with a 500 (nothing applied). A settle is applied once per
 * idempotency key, so the retries that follow either failure never credit twice.
 */
export const simulatedWallet = {
  async setBalance(db: Database, operatorId: string, b: SandboxBalance, now: number): Promise<SandboxBalance> {
    await db.transaction((tx) =>
      tx.run(
        `INSERT INTO sandbox_wallet_balances (operator_id, player_ref, currency, balance, updated_at)
         VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (operator_id, player_ref, currency)
         DO UPDATE SET balance = excluded.balance, updated_at = excluded.updated_at`,
        [operatorId, b.player_ref, b.currency, b.balance, now],
      ),
    );
    return b;
  },

  async balances(db: SqlExecutor, operatorId: string, playerRef: string): Promise<SandboxBalance[]> {
    const rows = await db.all<{ player_ref: string; currency: string; balance: number }>(
      `SELECT player_ref, currency, balance FROM sandbox_wallet_balances
       WHERE operator_id = ? AND player_ref = ? ORDER BY currency`,
      [operatorId, playerRef],
    );
    return rows.map((r) => ({ player_ref: r.player_ref, currency: r.currency, balance: Number(r.balance) }));
  },

  /** Inside the reserve transaction: the stake leaves the player's balance, or the bet is refused. */
  async debit(
    tx: SqlExecutor,
    operatorId: string,
    playerRef: string,
    currency: string,
    amount: number,
    now: number,
  ): Promise<void> {
    const r = await tx.run(
      `UPDATE sandbox_wallet_balances SET balance = balance - ?, updated_at = ?
       WHERE operator_id = ? AND player_ref = ? AND currency = ? AND balance >= ?`,
      [amount, now, operatorId, playerRef, currency, amount],
    );
    if (r.changes !== 1) {
      throw new DomainError(
        'INSUFFICIENT_FUNDS',
        `the simulated wallet balance of ${playerRef} in ${currency} is below the stake; ` +
          'set it with POST /v1/sandbox/wallet/balances',
      );
    }
  },

  /** One settle call of the outbox, answered as the switch says. */
  async settle(db: Database, config: Config, s: Settlement, now: number): Promise<SimulatedAnswer> {
    return db.transaction(async (tx) => {
      const settings = await sandboxStore.settings(tx, s.operatorId, config);
      const failure = settings.wallet.remaining === 0 ? 'none' : settings.wallet.failure;
      if (failure !== 'none' && settings.wallet.remaining !== null) {
        const remaining = settings.wallet.remaining - 1;
        await sandboxStore.saveSettings(
          tx,
          s.operatorId,
          { ...settings, wallet: remaining === 0 ? { failure: 'none', remaining: null } : { failure, remaining } },
          now,
        );
      }
      if (failure === 'error_500') {
        return {
          delivered: false,
          statusCode: 500,
          error: 'wallet answered 500',
          responseExcerpt: '{"error":"simulated wallet failure"}',
        };
      }
      const applied = await applyOnce(tx, s, now);
      if (failure === 'timeout') {
        return {
          delivered: false,
          statusCode: null,
          error: `no answer within ${config.wallet.timeoutMs} ms (outcome unknown)`,
          responseExcerpt: null,
        };
      }
      return {
        delivered: true,
        statusCode: 200,
        error: null,
        responseExcerpt: JSON.stringify({ ok: true, balance: applied }),
      };
    });
  },
};

/** Credits the bet's payout unless this idempotency key was applied before; returns the balance after. */
async function applyOnce(tx: SqlExecutor, s: Settlement, now: number): Promise<number | null> {
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
}
