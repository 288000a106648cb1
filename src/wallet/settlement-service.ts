import type { Clock } from '../clock/clock';
import { DomainError } from '../errors/codes';
import type { Database } from '../store/database';
import { type SettlementCursor, type SettlementFilter, settlementRepository } from './settlement-repository';
import type { AttemptRow, Settlement, SettlementStatus } from './settlements';

/** Whose settlements a caller may touch: one operator's (dashboard), or any (admin CLI: null). */
export type SettlementScope = string | null;

export interface RetryOptions {
  /**
   * Also send a settlement the wallet already confirmed, again under its idempotency_key (the
   * wallet answers from its record, without crediting twice). Only on explicit request: a retry
   * from a page that still showed the settlement pending must not re-send a confirmed one.
   */
  resendDelivered?: boolean;
}

/**
 * The one rule for "retry a wallet settlement", whoever asks (partner dashboard, admin CLI): a
 * pending settlement becomes due now, with the same idempotency_key and body; a delivered one is
 * refused with ILLEGAL_TRANSITION unless a re-send is asked for; one that does not exist, or belongs
 * to another operator, is NOT_FOUND.
 */
export async function retrySettlement(
  db: Database,
  clock: Clock,
  scope: SettlementScope,
  betId: string,
  options: RetryOptions = {},
): Promise<Settlement> {
  const allowed: SettlementStatus[] = options.resendDelivered ? ['pending', 'delivered'] : ['pending'];
  return db.transaction(async (tx) => {
    const current = await settlementRepository.byBet(tx, betId);
    if (!current || (scope !== null && current.operatorId !== scope)) {
      throw new DomainError('NOT_FOUND', `no wallet settlement for bet ${betId}`);
    }
    // Conditional on the status in the UPDATE: one the worker confirmed after the read is refused too.
    if (!(await settlementRepository.makeDue(tx, betId, clock.now(), allowed))) {
      throw new DomainError(
        'ILLEGAL_TRANSITION',
        `the wallet already confirmed the settlement of bet ${betId}: there is nothing to retry`,
      );
    }
    return (await settlementRepository.byBet(tx, betId))!;
  });
}

/**
 * Wallet settlements as the surfaces see them (Surface B, the dashboard, the CLI): reads, and the
 * manual "send it again now". The outbox worker (wallet-worker.ts) does the sending.
 */
export class SettlementService {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  byBet(betId: string): Promise<Settlement | undefined> {
    return settlementRepository.byBet(this.db, betId);
  }

  /** The settle calls of a page of bets, keyed by bet id, read in one query rather than one per bet. */
  byBets(betIds: readonly string[]): Promise<Map<string, Settlement>> {
    return settlementRepository.byBets(this.db, betIds);
  }

  /**
   * Oldest first; all operators when `operatorId` is absent (the CLI). `startingAfter` (a bet id, the
   * last of the previous page) continues the list after that settlement. It must be one the filter's
   * operator may see, otherwise VALIDATION_FAILED: another operator's bet id reveals nothing.
   */
  async list(filter: SettlementFilter & { startingAfter?: string }): Promise<Settlement[]> {
    const { startingAfter, ...rest } = filter;
    if (startingAfter === undefined) return settlementRepository.list(this.db, rest);
    const last = await this.cursorOf(filter.operatorId, startingAfter);
    return settlementRepository.list(this.db, { ...rest, after: last });
  }

  /**
   * The same list as pages: `limit` settlements and whether another follows. One row past the page is
   * read, so `hasMore` is exact (false means the list ends here) without counting.
   */
  async page(
    filter: SettlementFilter & { startingAfter?: string },
  ): Promise<{ settlements: Settlement[]; hasMore: boolean }> {
    const { startingAfter, ...rest } = filter;
    const after = startingAfter === undefined ? undefined : await this.cursorOf(filter.operatorId, startingAfter);
    const rows = await settlementRepository.list(this.db, { ...rest, after, limit: filter.limit + 1 });
    return { settlements: rows.slice(0, filter.limit), hasMore: rows.length > filter.limit };
  }

  /** Where a page goes on: after the settlement of `betId`, which the filter's operator must be able to see. */
  private async cursorOf(operatorId: string | undefined, betId: string): Promise<SettlementCursor> {
    const last = await settlementRepository.byBet(this.db, betId);
    if (!last || (operatorId !== undefined && last.operatorId !== operatorId)) {
      // The wording every list of the API gives for a cursor it cannot continue from (docs/decisions.md, Lists).
      const whose = operatorId === undefined ? '' : ' of this operator';
      throw new DomainError(
        'VALIDATION_FAILED',
        `starting_after: no settlement for bet ${betId}${whose} (give the last bet_id of a page)`,
      );
    }
    return { createdAt: last.createdAt, betId: last.betId };
  }

  pendingCount(operatorId: string): Promise<number> {
    return settlementRepository.pendingCount(this.db, operatorId);
  }

  attempts(betId: string): Promise<AttemptRow[]> {
    return settlementRepository.attempts(this.db, betId);
  }

  /** Due now, under the one retry rule (retrySettlement); `scope` null: any operator's (the CLI). */
  retry(scope: SettlementScope, betId: string, options: RetryOptions = {}): Promise<Settlement> {
    return retrySettlement(this.db, this.clock, scope, betId, options);
  }
}
