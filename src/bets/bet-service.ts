import type { Database } from '../store/database';
import type { Bet } from './bet';
import { betRepository, type BetFilter } from './bet-repository';

/** Bet reads for every surface (both APIs, the dashboard, the player page): they ask this, never the store. */
export class BetService {
  constructor(private readonly db: Database) {}

  byId(id: string): Promise<Bet | undefined> {
    return betRepository.byId(this.db, id);
  }

  /** One operator's bets matching the filter, newest first. */
  find(filter: BetFilter): Promise<Bet[]> {
    return betRepository.find(this.db, filter);
  }

  /** A player session's bets, newest first, read on the store's read-only path (the player page polls it). */
  ofSession(sessionId: string, limit: number): Promise<Bet[]> {
    return betRepository.bySession(this.db.reads, sessionId, limit);
  }

  countsByRound(operatorId: string, roundIds: readonly string[]): Promise<Map<string, number>> {
    return betRepository.countsByRound(this.db, operatorId, roundIds);
  }
}
