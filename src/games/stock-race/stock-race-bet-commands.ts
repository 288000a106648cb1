import {
  type BetCommands,
  FullPathNeeded,
  type PlaceBetAnswer,
  type PlaceBetCommand,
  placeBetSync,
  runCommand,
  type StoredText,
} from '../../bets/bet-commands';
import { claimKeySync, type KeyClaim } from '../../idempotency/idempotency-repository';
import { type BatchOutcome, CallBatcher } from '../../bets/call-batcher';
import type { PlayerSession } from '../../sessions/session';
import { type SessionRow, toSession } from '../../sessions/session-repository';
import type { Database } from '../../store/database';
import type { Round } from '../engine/round';
import { type RoundRow, toRound } from '../engine/round-repository';

/** A reservation decided from its session and round: a refusal, the bet to write, or the full path. */
export type ReservePlan = { refusal: StoredText } | { command: Omit<PlaceBetCommand, 'claim'> } | { fullPath: string };

// Both rows in one statement: on PostgreSQL the decision's inputs cost one round trip.
const SESSION_AND_ROUND_SQL =
  'SELECT (SELECT row_to_json(s) FROM sessions s WHERE s.id = ?) AS session, ' +
  '(SELECT row_to_json(r) FROM rounds r WHERE r.id = ?) AS round';
// The same for the reservations of a call of several (JSON arrays of session ids and of round ids):
// every session and every round they name, as two JSON arrays, still in one round trip.
const SESSIONS_AND_ROUNDS_SQL = `SELECT
  (SELECT json_agg(s) FROM sessions s WHERE s.id IN (SELECT jsonb_array_elements_text(?::jsonb))) AS sessions,
  (SELECT json_agg(r) FROM rounds r WHERE r.id IN (SELECT jsonb_array_elements_text(?::jsonb))) AS rounds`;
/**
 * Upper bound on reservations read in one call: as many as one rbs_place_bets call takes
 * (MAX_BETS_PER_CALL in bet-commands.ts), so a batch of reads goes on to at most one call of bets.
 */
const MAX_READS_PER_CALL = 64;

/** What a reservation is decided from: the rows its session and round ids name, if they exist. */
interface ReserveRows {
  session: SessionRow | null;
  round: RoundRow | null;
}

interface ReserveRead {
  sessionId: string;
  roundId: string;
}

/**
 * Stock Race's command units on one store. Its bets go through the BetCommands it shares with Crash,
 * so the place-bets of both games keep one call in flight per instance (CallBatcher). The app builds
 * one per store (app.ts).
 */
export class StockRaceCommands {
  /**
   * PostgreSQL: the reads of reservations that arrive while one read runs go out together (as
   * Crash's cash-outs do), one statement for all their sessions and rounds; each reservation then
   * decides on its own rows and goes on to BetCommands, which batches the bets in turn. A read
   * commits nothing, so a failed read of several is simply sent again one reservation at a time.
   */
  private readonly reads: CallBatcher<ReserveRead, ReserveRows>;

  constructor(
    private readonly db: Database,
    private readonly bets: BetCommands,
  ) {
    this.reads = new CallBatcher({
      maxPerCall: MAX_READS_PER_CALL,
      one: (read) => readAlone(db, read),
      many: (reads) => readTogether(db, reads),
    });
  }

  /**
   * A Stock Race reservation as one unit of work. SQLite: the session and round are read, `decide`
   * runs and the bet is written in one synchronous unit. PostgreSQL: both rows are read in one
   * statement (shared with the reservations that arrive meanwhile, this object's batcher), `decide`
   * runs, and rbs_place_bet claims the key, locks the round FOR SHARE (still open, or the full path)
   * and writes the bet in one more (shared too, BetCommands).
   */
  async reserve(
    claim: KeyClaim,
    sessionId: string,
    roundId: string,
    decide: (session: PlayerSession | undefined, round: Round | undefined) => ReservePlan,
  ): Promise<PlaceBetAnswer> {
    if (this.db.unit) {
      return runCommand<PlaceBetAnswer>(
        this.db,
        (tx) => {
          const session = tx.get<SessionRow>('SELECT * FROM sessions WHERE id = ?', [sessionId]);
          const round = tx.get<RoundRow>('SELECT * FROM rounds WHERE id = ?', [roundId]);
          const plan = decide(session && toSession(session), round && toRound(round));
          if ('fullPath' in plan) throw new FullPathNeeded(plan.fullPath);
          if ('refusal' in plan)
            return claimKeySync(tx, claim, plan.refusal.statusCode, plan.refusal.response) ?? { outcome: 'refused' };
          // The claim before the spread: a spread followed by more properties is a slow path on Node 20.
          return placeBetSync(tx, { claim, ...plan.command });
        },
        { name: '', sql: '', params: [] },
      );
    }
    const row = await this.reads.submit({ sessionId, roundId });
    // Decided here, not in the batcher: a decide that throws rejects its own reservation only.
    const plan = decide(row.session ? toSession(row.session) : undefined, row.round ? toRound(row.round) : undefined);
    if ('fullPath' in plan) return { outcome: 'full_path' };
    if ('refusal' in plan) {
      return this.bets.place({
        claim,
        refusal: plan.refusal,
        game: 'stock_race',
        world: null,
        roundId: null,
        closed: null,
        placed: { prefix: '', suffix: '' },
        bet: {
          id: '',
          player: '',
          sessionId: null,
          currency: null,
          amount: 0,
          autoCashout: null,
          selections: null,
          status: 'reserved',
          potentialPayout: null,
        },
        velocity: null,
      });
    }
    return this.bets.place({ claim, ...plan.command });
  }
}

async function readAlone(db: Database, { sessionId, roundId }: ReserveRead): Promise<ReserveRows> {
  const rows = await db.prepared!<ReserveRows>('rbs_session_and_round', SESSION_AND_ROUND_SQL, [sessionId, roundId]);
  return { session: rows[0]?.session ?? null, round: rows[0]?.round ?? null };
}

async function readTogether(db: Database, reads: ReserveRead[]): Promise<BatchOutcome<ReserveRows>[]> {
  const sessionIds = [...new Set(reads.map((r) => r.sessionId))];
  const roundIds = [...new Set(reads.map((r) => r.roundId))];
  const rows = await db.prepared!<{ sessions: SessionRow[] | null; rounds: RoundRow[] | null }>(
    'rbs_sessions_and_rounds',
    SESSIONS_AND_ROUNDS_SQL,
    [JSON.stringify(sessionIds), JSON.stringify(roundIds)],
  );
  // json_agg over no rows is NULL, not an empty array.
  const sessionOf = new Map((rows[0]?.sessions ?? []).map((row) => [row.id, row]));
  const roundOf = new Map((rows[0]?.rounds ?? []).map((row) => [row.id, row]));
  return reads.map(({ sessionId, roundId }) => ({
    answer: { session: sessionOf.get(sessionId) ?? null, round: roundOf.get(roundId) ?? null },
  }));
}
