import { DomainError } from '../errors/codes';
import type { Config } from '../config/config';
import type { Database, SqlExecutor, WriteTransaction } from '../store/database';
import type { AttemptResult, Settlement } from '../wallet/settlements';
import { sandboxRepository } from './sandbox-repository';
import type { SandboxBalance } from './sandbox-settings';

export type { SandboxBalance } from './sandbox-settings';

export type SimulatedAnswer = Omit<AttemptResult, 'startedAt' | 'latencyMs'>;

/**
 * The wallet a sandbox operator without a wallet_url plays against: a balance per player and
 * currency, debited when a bet is reserved and credited by the settle calls of the wallet outbox,
 * which reaches it instead of an HTTP wallet and is retried exactly the same way. Its failure
 * switch makes the next settle calls time out (the credit is applied but the answer is lost, the
 * "outcome unknown" case) or fail with a 500 (nothing applied). A settle is applied once per
 * idempotency key, so the retries that follow either failure never credit twice.
 */
export const simulatedWallet = {
  async setBalance(
    inTx: WriteTransaction,
    operatorId: string,
    b: SandboxBalance,
    now: number,
  ): Promise<SandboxBalance> {
    await inTx((tx) => sandboxRepository.setBalance(tx, operatorId, b, now));
    return b;
  },

  balances(db: SqlExecutor, operatorId: string, playerRef: string): Promise<SandboxBalance[]> {
    return sandboxRepository.balances(db, operatorId, playerRef);
  },

  /** Inside the reserve transaction: the stake leaves the player's balance, or the bet is refused. */
  async debit(
    tx: SqlExecutor,
    operatorId: string,
    playerRef: string,
    currency: string,
    amount: number,
    now: number,
    betId?: string,
  ): Promise<void> {
    if (!(await sandboxRepository.debit(tx, operatorId, playerRef, currency, amount, now, betId))) {
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
      // A stake the operator's own wallet holds (reserved before its wallet_url was cleared) waits, as a
      // live operator's paused settlement does, for a URL: crediting it here would pay back a stake this
      // wallet never took.
      if (await sandboxRepository.stakeHeldElsewhere(tx, s)) {
        return {
          delivered: false,
          statusCode: null,
          error: 'the operator has no wallet_url configured',
          responseExcerpt: null,
        };
      }
      const settings = await sandboxRepository.settings(tx, s.operatorId, config);
      const failure = settings.wallet.remaining === 0 ? 'none' : settings.wallet.failure;
      if (failure !== 'none' && settings.wallet.remaining !== null) {
        const remaining = settings.wallet.remaining - 1;
        await sandboxRepository.saveSettings(
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
      const applied = await sandboxRepository.applySettleOnce(tx, s, now);
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
