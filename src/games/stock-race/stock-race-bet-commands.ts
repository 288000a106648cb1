import {
  type BetCommands,
  claimKeySync,
  FullPathNeeded,
  type KeyClaim,
  type PlaceBetAnswer,
  type PlaceBetCommand,
  placeBetSync,
  runCommand,
  type StoredText,
} from '../../bets/bet-commands';
import type { PlayerSession } from '../../sessions/session-service';
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

/**
 * Stock Race's command units on one store. Its bets go through the BetCommands it shares with Crash,
 * so the place-bets of both games keep one call in flight per instance (CallBatcher). The app builds
 * one per store (app.ts).
 */
export class StockRaceCommands {
  constructor(
    private readonly db: Database,
    private readonly bets: BetCommands,
  ) {}

  /**
   * A Stock Race reservation as one unit of work. SQLite: the session and round are read, `decide`
   * runs and the bet is written in one synchronous unit. PostgreSQL: both rows are read in one
   * statement, `decide` runs, and rbs_place_bet claims the key, locks the round FOR SHARE (still
   * open, or the full path) and writes the bet in one more.
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
          return placeBetSync(tx, { ...plan.command, claim });
        },
        { name: '', sql: '', params: [] },
      );
    }
    const rows = await this.db.prepared!<{ session: SessionRow | null; round: RoundRow | null }>(
      'rbs_session_and_round',
      SESSION_AND_ROUND_SQL,
      [sessionId, roundId],
    );
    const row = rows[0];
    const plan = decide(row?.session ? toSession(row.session) : undefined, row?.round ? toRound(row.round) : undefined);
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
        },
        velocity: null,
      });
    }
    return this.bets.place({ ...plan.command, claim });
  }
}
