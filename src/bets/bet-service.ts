import { DomainError } from '../errors/codes';
import type { Game } from '../games/engine/round';
import { roundRepository } from '../games/engine/round-repository';
import type { Operator } from '../operators/operator';
import type { Database } from '../store/database';
import type { Bet, BetStatus } from './bet';
import { betRepository, type BetFilter } from './bet-repository';

/** The bets of one game: Crash bets for `'crash'`, Stock Race bets for `'stock_race'`. */
export type BetOf<G extends Game> = Extract<Bet, { game: G }>;

/**
 * What a surface lists: one of its operator's games, by player or by round (at least one of them:
 * each is served by an index of its own), optionally by status, a page of `limit` after a cursor.
 */
export interface BetListQuery<G extends Game> {
  operator: Pick<Operator, 'id' | 'mode'>;
  game: G;
  player?: string;
  /** The round's number in the operator's world (live, or its sandbox). */
  roundNumber?: number;
  roundId?: string;
  status?: BetStatus;
  limit: number;
  /** The last bet_id of the previous page. */
  startingAfter?: string;
}

export interface BetPage<B extends Bet> {
  bets: B[];
  hasMore: boolean;
}

const isOfGame = <G extends Game>(bet: Bet, game: G): bet is BetOf<G> => bet.game === game;

/** Bet reads for every surface (both APIs, the dashboard, the player page): they ask this, never the store. */
export class BetService {
  constructor(private readonly db: Database) {}

  byId(id: string): Promise<Bet | undefined> {
    return betRepository.byId(this.db, id);
  }

  /**
   * A page of an operator's bets of one game, newest first by (placed_at DESC, id). Read on the
   * read-only path: back-office listings never queue behind the place-bet writes. The operator's
   * bets are only ever of its own world (a test operator plays only in its sandbox), so scoping by
   * operator keeps live and sandbox bets apart.
   */
  async list<G extends Game>(q: BetListQuery<G>): Promise<BetPage<BetOf<G>>> {
    if (q.player === undefined && q.roundNumber === undefined && q.roundId === undefined) {
      // Refused rather than served by a scan of the operator's whole history (no index covers that).
      throw new DomainError('VALIDATION_FAILED', 'give a player or a round to list bets by');
    }
    const reads = this.db.reads;
    let after: { placedAt: number; id: string } | undefined;
    if (q.startingAfter !== undefined) {
      // A UUID is case-insensitive on input; the service stores bet ids in lower case.
      const cursorId = q.startingAfter.toLowerCase();
      const last = await betRepository.byId(reads, cursorId);
      // Another operator's bet is answered like an unknown one: the cursor reveals nothing.
      if (!last || last.operatorId !== q.operator.id || last.game !== q.game) {
        throw new DomainError(
          'VALIDATION_FAILED',
          `starting_after: no bet ${q.startingAfter} of this operator (give the last bet_id of a page)`,
        );
      }
      after = { placedAt: last.placedAt, id: last.id };
    }
    let roundId = q.roundId;
    if (q.roundNumber !== undefined) {
      const scope = q.operator.mode === 'test' ? q.operator.id : null;
      const round = await roundRepository.byNumber(reads, q.game, q.roundNumber, scope);
      if (!round || (roundId !== undefined && roundId !== round.id)) return { bets: [], hasMore: false };
      roundId = round.id;
    }
    // One more than the page: whether it exists is `has_more`, without a count.
    const rows = await betRepository.page(reads, {
      operatorId: q.operator.id,
      game: q.game,
      player: q.player,
      roundId,
      status: q.status,
      after,
      limit: q.limit + 1,
    });
    const bets = rows.slice(0, q.limit).map((bet) => {
      if (isOfGame(bet, q.game)) return bet;
      throw new Error(`bet ${bet.id} was listed as a ${q.game} bet but is a ${bet.game} bet`);
    });
    return { bets, hasMore: rows.length > q.limit };
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
