import type { Clock } from '../clock/clock';
import type { Database } from '../store/database';
import { settlementRepository, type AttemptRow, type Settlement, type SettlementStatus } from './settlements';

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

  /** Oldest first; all operators when `operatorId` is absent (the CLI). */
  list(filter: { operatorId?: string; status?: SettlementStatus; limit: number }): Promise<Settlement[]> {
    return settlementRepository.list(this.db, filter);
  }

  attempts(betId: string): Promise<AttemptRow[]> {
    return settlementRepository.attempts(this.db, betId);
  }

  /** Due now; a delivered one is sent again with its original idempotency_key. */
  retryNow(betId: string): Promise<Settlement> {
    return settlementRepository.retryNow(this.db, betId, this.clock.now());
  }
}
