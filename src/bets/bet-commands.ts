import type { DomainError } from '../errors/codes';
import type { CommandAnswer, CommandResponse, KeyClaim } from '../idempotency/idempotency-repository';
import { claimKeySync } from '../idempotency/idempotency-repository';
import type { Game } from '../games/engine/round';
import type { Database, SqlExecutor, SqlParam, SyncExecutor } from '../store/database';
import { CallBatcher } from './call-batcher';

export interface IdempotentAnswer extends CommandResponse {
  replayed: boolean;
}

/** An idempotent request as the route received it. */
export interface CommandRequest {
  key: string;
  /** The route the key was used on (part of the request hash). */
  route: string;
  body: unknown;
  signature?: string;
}

/** How the caller's surface answers a refusal (status and body); stored under the key. */
export type PresentRefusal = (error: DomainError) => CommandResponse;

/**
 * The exactly-once wrapper a game's command service runs its units in (IdempotencyService): it
 * hashes the request, keeps concurrent duplicates in this process to one, answers key conflicts,
 * and runs `effect` in an interactive transaction when the unit asks for the full path.
 */
export interface CommandRunner {
  command(
    scope: { operatorId: string; key: string; route: string; body: unknown; signature?: string },
    unit: (claim: KeyClaim) => Promise<CommandAnswer>,
    present: PresentRefusal,
    effect: (tx: SqlExecutor) => Promise<CommandResponse>,
  ): Promise<IdempotentAnswer>;
}

/** Facts the commands count once committed (live operators only): the service metrics. */
export interface BetCounters {
  betPlaced(game: Game): void;
  cashedOut(game: Game, payout: number, currency: string | null): void;
}

/** A response as it is stored under an idempotency key: the exact text a replay sends back. */
export interface StoredText {
  statusCode: number;
  response: string;
}

/**
 * Placing a bet as one unit of work: everything that needs no store was decided by the game's
 * service beforehand; the unit claims the key, checks the round, applies the compliance rule that
 * needs the store and writes the bet.
 */
export interface PlaceBetCommand {
  claim: KeyClaim;
  /** A refusal decided before the store (stake out of range, say): stored under the key, nothing else. */
  refusal: StoredText | null;
  game: Game;
  /** null: the live world; a sandbox operator's id: its own rounds. */
  world: string | null;
  /**
   * The round the service read and found open (Stock Race), checked again under the unit's lock
   * (changed: the full path runs); null (Crash): the world's newest open round, or `closed`.
   */
  roundId: string | null;
  /** The answer when no round is taking bets (Crash). */
  closed: StoredText | null;
  /** The 200 response around the round number: prefix + number + suffix. */
  placed: { prefix: string; suffix: string };
  bet: {
    id: string;
    player: string;
    sessionId: string | null;
    currency: string | null;
    amount: number;
    autoCashout: number | null;
    /** JSON text, as stored. */
    selections: string | null;
    status: 'active' | 'reserved';
    /** Stock Race: what the bet pays if it wins, as its answer quotes it; Crash: null. */
    potentialPayout: number | null;
  };
  /** Bet velocity rule: more bets than `limit` since `since` (this one included) needs the full path. */
  velocity: { limit: number; since: number } | null;
}

export type PlaceBetAnswer =
  | CommandAnswer
  | { outcome: 'refused' }
  | { outcome: 'placed'; round_id: string; round_number: number };

/** SQLSTATE the PostgreSQL commands raise when the full path must run; nothing was written. */
export const FULL_PATH_SQLSTATE = 'RB001';

/** Thrown inside a synchronous unit for the same reason: its savepoint rolls its writes back. */
export class FullPathNeeded extends Error {
  constructor(why: string) {
    super(why);
    this.name = 'FullPathNeeded';
  }
}

/**
 * Runs a command unit on whichever store `db` is: a synchronous unit in SQLite's group commit, or
 * one prepared statement calling a server-side function on PostgreSQL. Either way a request for
 * the full path comes back as `{ outcome: 'full_path' }`.
 */
export async function runCommand<T>(
  db: Database,
  sqlite: (tx: SyncExecutor) => T,
  postgres: { name: string; sql: string; params: readonly SqlParam[] },
): Promise<T | { outcome: 'full_path' }> {
  try {
    if (db.unit) return await db.unit(sqlite);
    if (!db.prepared) throw new Error('this store runs no command units');
    const rows = await db.prepared<{ r: T }>(postgres.name, postgres.sql, postgres.params);
    return rows[0]!.r;
  } catch (error) {
    if (error instanceof FullPathNeeded || (error as { code?: unknown }).code === FULL_PATH_SQLSTATE)
      return { outcome: 'full_path' };
    throw error;
  }
}

const PLACE_BET_SQL = `SELECT rbs_place_bet(${Array.from({ length: 25 }, () => '?').join(', ')}) AS r`;
const PLACE_BETS_SQL = 'SELECT rbs_place_bets(?::jsonb) AS r';
/** Upper bound on bets sent in one rbs_place_bets call. */
const MAX_BETS_PER_CALL = 64;

/** rbs_place_bet's 25 arguments in order (migration 013 added the last); rbs_place_bets takes a JSON array of these. */
export function placeBetParams(c: PlaceBetCommand): SqlParam[] {
  return [
    c.claim.operatorId,
    c.claim.key,
    c.claim.requestHash,
    c.claim.signature,
    c.claim.now,
    c.refusal?.statusCode ?? null,
    c.refusal?.response ?? null,
    c.game,
    c.world,
    c.roundId,
    c.closed?.statusCode ?? null,
    c.closed?.response ?? null,
    c.placed.prefix,
    c.placed.suffix,
    c.bet.id,
    c.bet.player,
    c.bet.sessionId,
    c.bet.currency,
    c.bet.amount,
    c.bet.autoCashout,
    c.bet.selections,
    c.bet.status,
    c.velocity?.limit ?? 0,
    c.velocity?.since ?? 0,
    c.bet.potentialPayout,
  ];
}

/**
 * Places bets on one store, for every game: SQLite runs each bet as a synchronous unit of its group
 * commit; PostgreSQL sends bets through this object's CallBatcher. Alone, a bet is one rbs_place_bet
 * call; bets that arrive while a call runs go out together in one rbs_place_bets call (one
 * transaction, one commit and one round lock for the lot). A bet that answers full_path writes
 * nothing, so one bet of a call never aborts another. rbs_place_bets (migration 010) decides the
 * call's bets with a few statements for all of them, answering each as rbs_place_bet would one after
 * the other; a call whose bets could see each other's writes (a key, a signature or a velocity-limited
 * player twice) runs rbs_place_bet for each in turn.
 *
 * The app builds one per store (app.ts) and hands it to both games' commands: "one call in flight"
 * (CallBatcher) holds for all the place-bets of an instance only if they share this one object.
 */
export class BetCommands {
  private readonly batcher: CallBatcher<SqlParam[], PlaceBetAnswer>;

  constructor(private readonly db: Database) {
    this.batcher = new CallBatcher({
      maxPerCall: MAX_BETS_PER_CALL,
      one: (params) =>
        runCommand<PlaceBetAnswer>(db, () => ({ outcome: 'full_path' }), {
          name: 'rbs_place_bet',
          sql: PLACE_BET_SQL,
          params,
        }),
      many: async (batch) => {
        const rows = await db.prepared!<{ r: PlaceBetAnswer[] }>('rbs_place_bets', PLACE_BETS_SQL, [
          JSON.stringify(batch),
        ]);
        return rows[0]!.r.map((answer) => ({ answer }));
      },
    });
  }

  place(c: PlaceBetCommand): Promise<PlaceBetAnswer> {
    if (this.db.unit)
      return runCommand<PlaceBetAnswer>(this.db, (tx) => placeBetSync(tx, c), { name: '', sql: '', params: [] });
    return this.batcher.submit(placeBetParams(c));
  }
}

interface RoundRow {
  id: string;
  round_number: number;
  betting_closes_at: number;
  status?: string;
  game?: string;
  operator_id?: string | null;
}

/** rbs_place_bet (migrations 007 and 013), statement for statement, as a synchronous SQLite unit. */
export function placeBetSync(tx: SyncExecutor, c: PlaceBetCommand): PlaceBetAnswer {
  const now = c.claim.now;
  let answer: StoredText | null = c.refusal;
  let round: RoundRow | undefined;
  if (!answer && c.roundId === null) {
    round = tx.get<RoundRow>(
      `SELECT id, round_number, betting_closes_at FROM rounds WHERE game = ? AND status = 'open'
       AND ${c.world === null ? 'operator_id IS NULL' : 'operator_id = ?'} ORDER BY round_number DESC LIMIT 1`,
      c.world === null ? [c.game] : [c.game, c.world],
    );
    if (!round || now >= Number(round.betting_closes_at)) {
      if (!c.closed) throw new FullPathNeeded('no round is taking bets');
      answer = c.closed;
    }
  } else if (!answer) {
    round = tx.get<RoundRow>(
      'SELECT id, round_number, betting_closes_at, status, game, operator_id FROM rounds WHERE id = ?',
      [c.roundId],
    );
    const stillOpen =
      round && round.game === c.game && (round.operator_id ?? null) === c.world && round.status === 'open';
    if (!stillOpen || now >= Number(round!.betting_closes_at))
      throw new FullPathNeeded(`round ${c.roundId} changed since it was read`);
  }
  const placed = !answer;
  if (!answer)
    answer = { statusCode: 200, response: `${c.placed.prefix}${Number(round!.round_number)}${c.placed.suffix}` };
  const conflict = claimKeySync(tx, c.claim, answer.statusCode, answer.response);
  if (conflict) return conflict;
  if (!placed) return { outcome: 'refused' };
  if (c.velocity) {
    const row = tx.get<{ n: number }>(
      'SELECT COUNT(*) AS n FROM bets WHERE operator_id = ? AND player = ? AND placed_at > ?',
      [c.claim.operatorId, c.bet.player, c.velocity.since],
    );
    if (Number(row?.n ?? 0) + 1 > c.velocity.limit) throw new FullPathNeeded('bet velocity rule hit');
  }
  const b = c.bet;
  tx.run(
    `INSERT INTO bets (id, operator_id, game, round_id, round_number, player, session_id, currency, amount,
       auto_cashout,
       selections, status, payout, cashout_multiplier, cashout_kind, placed_at, settled_at, potential_payout)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL, ?, NULL, ?)`,
    [
      b.id,
      c.claim.operatorId,
      c.game,
      round!.id,
      round!.round_number,
      b.player,
      b.sessionId,
      b.currency,
      b.amount,
      b.autoCashout,
      b.selections,
      b.status,
      now,
      b.potentialPayout,
    ],
  );
  return { outcome: 'placed', round_id: round!.id, round_number: Number(round!.round_number) };
}
