import { readerOf, type Database, type ReadOptions } from '../../store/database';
import type { ClosedRound, Game, Round, RoundScope } from './round';
import { roundRepository } from './round-repository';

/**
 * Round reads for every surface (both APIs, the dashboard, the player page, the CLI): they ask
 * this service, never the store. Scopes: null for the live world, an operator id for its sandbox.
 */
export class RoundService {
  constructor(private readonly db: Database) {}

  byId(id: string): Promise<Round | undefined> {
    return roundRepository.byId(this.db, id);
  }

  byNumber(game: Game, roundNumber: number, scope: RoundScope): Promise<Round | undefined> {
    return roundRepository.byNumber(this.db, game, roundNumber, scope);
  }

  /** The newest round of a game, whatever its state. */
  latest(game: Game, scope: RoundScope, options?: ReadOptions): Promise<Round | undefined> {
    return roundRepository.latest(readerOf(this.db, options), game, scope);
  }

  /** Newest first: by round number for one game, by opening time across both. */
  recent(game: Game | null, limit: number, scope: RoundScope): Promise<Round[]> {
    return roundRepository.recent(this.db, game, limit, scope);
  }

  /** The latest closed rounds of one game, newest first. */
  recentlyClosed(game: Game, limit: number, scope: RoundScope, options?: ReadOptions): Promise<ClosedRound[]> {
    return roundRepository.recentlyClosed(readerOf(this.db, options), game, limit, scope);
  }

  /** The rounds of any game most recently closed, newest close first. */
  lastClosed(limit: number, scope: RoundScope, options?: ReadOptions): Promise<Round[]> {
    return roundRepository.lastClosed(readerOf(this.db, options), limit, scope);
  }
}
