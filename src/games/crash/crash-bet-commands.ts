import type { Bet, CashoutKind } from '../../bets/bet';
import { type BetRow, toBet } from '../../bets/bet-repository';
import {
  type BetCommands,
  FullPathNeeded,
  type PlaceBetAnswer,
  type PlaceBetCommand,
  runCommand,
  type StoredText,
} from '../../bets/bet-commands';
import { claimKeySync, type CommandAnswer, type KeyClaim } from '../../idempotency/idempotency-repository';
import { type BatchOutcome, CallBatcher } from '../../bets/call-batcher';
import type { Database, SqlParam, SyncExecutor } from '../../store/database';
import { recordOperatorEventSync } from '../../webhooks/delivery-repository';
import type { OperatorEventRow } from '../../webhooks/event-rows';
import type { Round } from '../engine/round';
import { type RoundRow, toRound } from '../engine/round-repository';

/**
 * What a cash-out does once decided from the bet and its round (see decideCashout): a refusal to
 * store under the key, the settlement to write, or the full interactive path (a compliance flag).
 */
export type CashoutPlan =
  | { refusal: StoredText }
  | {
      settle: { payout: number; multiplier: number; kind: CashoutKind };
      /** The 200 response, stored under the key. */
      response: StoredText;
      /** The round must still be running with a heartbeat at least this recent. */
      aliveSince: number;
      event: OperatorEventRow;
      /** Machine-timing rule (manual cash-outs): a streak this long within `windowMs` needs the full path. */
      timing: { streak: number; windowMs: number; since: number; decide: (recent: TimedRow[]) => boolean } | null;
    }
  | { fullPath: string };

export interface TimedRow {
  id: string;
  settled_at: number | null;
  running_at: number | null;
}

export type CashoutAnswer = CommandAnswer | { outcome: 'refused' } | { outcome: 'settled' };

const CASH_OUT_SQL = `SELECT rbs_cash_out(${Array.from({ length: 21 }, () => '?').join(', ')}) AS r`;
const CASH_OUTS_SQL = 'SELECT rbs_cash_outs(?::jsonb) AS r';
// One statement for both rows: on PostgreSQL the decision's inputs cost one round trip.
const BET_AND_ROUND_SQL =
  'SELECT row_to_json(b) AS bet, row_to_json(r) AS round FROM bets b JOIN rounds r ON r.id = b.round_id WHERE b.id = ?';
// The same for every bet of a call of several (a JSON array of bet ids): still one round trip.
const BETS_AND_ROUNDS_SQL = `SELECT row_to_json(b) AS bet, row_to_json(r) AS round
  FROM bets b JOIN rounds r ON r.id = b.round_id WHERE b.id IN (SELECT jsonb_array_elements_text(?::jsonb))`;
/**
 * Upper bound on cash-outs in one rbs_cash_outs call. Each runs in a block of its own, a
 * subtransaction that takes an id of its own once it writes; PostgreSQL keeps up to 64 of them per
 * session in shared memory, and beyond that every other session's visibility checks must look them up.
 */
const MAX_CASH_OUTS_PER_CALL = 64;

type Decide = (bet: Bet | undefined, round: Round | undefined) => CashoutPlan;

/** A cash-out as it waits for its PostgreSQL read. */
interface CashoutRequest {
  claim: KeyClaim;
  betId: string;
  decide: Decide;
}

/**
 * A cash-out once its read is done and `decide` has run: its answer already (the full path), or the
 * answer of the write it was handed on to. The write's promise sits inside an object so that the read
 * stage answers as soon as it has handed the write on, rather than when the write commits.
 */
type Decided = { done: CashoutAnswer } | { written: Promise<CashoutAnswer> };

/**
 * Crash's command units on one store: its bets go through the BetCommands it shares with Stock Race
 * (one call of place-bets in flight per instance, whichever game placed them), and its cash-outs
 * through two CallBatchers of its own, one per stage. The app builds one per store (app.ts).
 */
export class CrashCommands {
  /**
   * PostgreSQL cash-outs, stage one: the read of the bet and its round, then `decide`. Alone, one
   * rbs_bet_and_round read; cash-outs that arrive while a read is in flight are read together in the
   * next one (rbs_bets_and_rounds), and each is decided on its own rows. Those with something to
   * write are handed on to `writes` all at once, and this stage takes its next batch at once: the
   * read of one batch runs while the write of the one before it is in flight.
   */
  private readonly reads: CallBatcher<CashoutRequest, Decided>;
  /**
   * Stage two: rbs_cash_out alone, or rbs_cash_outs (migration 009) for several, one transaction and
   * one commit. The write re-checks under the bet's lock what the read saw (the bet still active, its
   * round still alive) and sends the cash-out to the full path otherwise, which answers it as it would
   * alone. So a cash-out read while a write in flight settles the same bet (or claims the same key)
   * ends as if it had come after that write: the full path's 409, or the replay of the stored answer.
   * Two cash-outs of one bet in a call behave as one after the other in the same way.
   */
  private readonly writes: CallBatcher<SqlParam[], CashoutAnswer>;

  constructor(
    private readonly db: Database,
    private readonly bets: BetCommands,
  ) {
    this.reads = new CallBatcher({
      maxPerCall: MAX_CASH_OUTS_PER_CALL,
      one: (request) => this.readAlone(request),
      many: (requests) => this.readTogether(requests),
    });
    this.writes = new CallBatcher({
      maxPerCall: MAX_CASH_OUTS_PER_CALL,
      one: (params) => writeAlone(db, params),
      many: (commands) => writeTogether(db, commands),
    });
  }

  /** A Crash bet, through the place-bet command both games share (BetCommands.place). */
  placeBet(c: PlaceBetCommand): Promise<PlaceBetAnswer> {
    return this.bets.place(c);
  }

  /**
   * A Crash cash-out as one unit of work. SQLite: the rows are read, `decide` runs and the plan is
   * written, all in one synchronous unit of the group commit. PostgreSQL: the rows are read in one
   * statement, `decide` runs, and rbs_cash_out (migration 008) claims the key and writes the plan in
   * one more, checking that the bet is still active and its round still alive (else the full path);
   * cash-outs that arrive together share each statement, the write one commit (`reads`, `writes`).
   */
  async cashout(claim: KeyClaim, betId: string, decide: Decide): Promise<CashoutAnswer> {
    if (this.db.unit) {
      return runCommand<CashoutAnswer>(this.db, (tx) => cashoutSync(tx, claim, betId, decide), {
        name: '',
        sql: '',
        params: [],
      });
    }
    const decided = await this.reads.submit({ claim, betId, decide });
    return 'done' in decided ? decided.done : decided.written;
  }

  private async readAlone({ claim, betId, decide }: CashoutRequest): Promise<Decided> {
    const rows = await this.db.prepared!<{ bet: BetRow; round: RoundRow }>('rbs_bet_and_round', BET_AND_ROUND_SQL, [
      betId,
    ]);
    const row = rows[0];
    const plan = decide(row ? toBet(row.bet) : undefined, row ? toRound(row.round) : undefined);
    if ('fullPath' in plan) return { done: { outcome: 'full_path' } };
    return { written: this.writes.submit(cashOutParams(claim, betId, row?.bet.round_id ?? null, plan)) };
  }

  private async readTogether(requests: CashoutRequest[]): Promise<BatchOutcome<Decided>[]> {
    const ids = [...new Set(requests.map((r) => r.betId))];
    const rows = await this.db.prepared!<{ bet: BetRow; round: RoundRow }>('rbs_bets_and_rounds', BETS_AND_ROUNDS_SQL, [
      JSON.stringify(ids),
    ]);
    const rowOf = new Map(rows.map((row) => [row.bet.id, row]));
    const outcomes: BatchOutcome<Decided>[] = [];
    const toWrite: { index: number; params: SqlParam[] }[] = [];
    requests.forEach(({ claim, betId, decide }, index) => {
      const row = rowOf.get(betId);
      let plan: CashoutPlan;
      try {
        plan = decide(row ? toBet(row.bet) : undefined, row ? toRound(row.round) : undefined);
      } catch (error) {
        // What this cash-out alone would have thrown, to its caller alone.
        outcomes[index] = { error };
        return;
      }
      if ('fullPath' in plan) outcomes[index] = { answer: { done: { outcome: 'full_path' } } };
      else toWrite.push({ index, params: cashOutParams(claim, betId, row?.bet.round_id ?? null, plan) });
    });
    // All at once, after the last decision: they go out in one write, not the first alone. Nothing
    // here throws after this, so a read retried alone never hands on a write twice.
    const written = this.writes.submitAll(toWrite.map((w) => w.params));
    toWrite.forEach((w, k) => {
      outcomes[w.index] = { answer: { written: written[k]! } };
    });
    return outcomes;
  }
}

function writeAlone(db: Database, params: SqlParam[]): Promise<CashoutAnswer> {
  return runCommand<CashoutAnswer>(db, () => ({ outcome: 'full_path' }), {
    name: 'rbs_cash_out',
    sql: CASH_OUT_SQL,
    params,
  });
}

async function writeTogether(db: Database, commands: SqlParam[][]): Promise<BatchOutcome<CashoutAnswer>[]> {
  const result = await db.prepared!<{ r: CashoutAnswer[] }>('rbs_cash_outs', CASH_OUTS_SQL, [JSON.stringify(commands)]);
  return result[0]!.r.map((answer) => ({ answer }));
}

/** rbs_cash_out's 21 arguments, in order (rbs_cash_outs takes an array of them). */
function cashOutParams(
  claim: KeyClaim,
  betId: string,
  roundId: string | null,
  plan: Exclude<CashoutPlan, { fullPath: string }>,
): SqlParam[] {
  const refusal = 'refusal' in plan ? plan.refusal : null;
  const settle = 'settle' in plan ? plan : null;
  return [
    claim.operatorId,
    claim.key,
    claim.requestHash,
    claim.signature,
    claim.now,
    refusal?.statusCode ?? null,
    refusal?.response ?? null,
    betId,
    roundId,
    settle?.settle.payout ?? null,
    settle?.settle.multiplier ?? null,
    settle?.settle.kind ?? null,
    settle?.aliveSince ?? null,
    settle?.response.response ?? null,
    settle?.event.id ?? null,
    settle?.event.seq ?? null,
    settle?.event.data ?? null,
    settle ? (settle.event.livemode ? 1 : 0) : null,
    settle?.timing?.streak ?? 0,
    settle?.timing?.windowMs ?? 0,
    settle?.timing?.since ?? 0,
  ];
}

/**
 * Whether the player placed at least `streak` bets since `since`: a necessary condition for a streak
 * of that many manual cash-outs, answered from the covering (operator, player, placed_at) index. Most
 * players have fewer, and then the dearer read of their cash-outs joined to their rounds is skipped.
 */
function hasStreakCandidates(
  tx: SyncExecutor,
  operatorId: string,
  player: string,
  timing: { streak: number; since: number },
): boolean {
  // At least `streak` bets: the one at offset streak - 1 exists (the rule sets streak >= 2). The same
  // index entries as a COUNT over a LIMIT subquery, without the subquery: 1.0 µs against 12.3
  // (`npx tsx bench/sqlite-reads.ts`).
  const row = tx.get<{ placed_at: number }>(
    'SELECT placed_at FROM bets WHERE operator_id = ? AND player = ? AND placed_at > ? ' +
      'ORDER BY placed_at LIMIT 1 OFFSET ?',
    [operatorId, player, timing.since, timing.streak - 1],
  );
  return row !== undefined;
}

/** rbs_cash_out, with the read and the decision inside the same synchronous unit (SQLite). */
function cashoutSync(tx: SyncExecutor, claim: KeyClaim, betId: string, decide: Decide): CashoutAnswer {
  const betRow = tx.get<BetRow>('SELECT * FROM bets WHERE id = ?', [betId]);
  const roundRow = betRow ? tx.get<RoundRow>('SELECT * FROM rounds WHERE id = ?', [betRow.round_id]) : undefined;
  const plan = decide(betRow ? toBet(betRow) : undefined, roundRow ? toRound(roundRow) : undefined);
  if ('fullPath' in plan) throw new FullPathNeeded(plan.fullPath);
  if ('refusal' in plan)
    return claimKeySync(tx, claim, plan.refusal.statusCode, plan.refusal.response) ?? { outcome: 'refused' };
  const conflict = claimKeySync(tx, claim, plan.response.statusCode, plan.response.response);
  if (conflict) return conflict;
  // One writer: the bet read above is still active, and its round still what decide saw.
  const s = plan.settle;
  tx.run(
    'UPDATE bets SET status = ?, payout = ?, cashout_multiplier = ?, cashout_kind = ?, settled_at = ? WHERE id = ?',
    ['cashed_out', s.payout, s.multiplier, s.kind, claim.now, betId],
  );
  if (plan.timing && hasStreakCandidates(tx, claim.operatorId, betRow!.player, plan.timing)) {
    const recent = tx.all<TimedRow>(
      `SELECT b.id, b.settled_at, r.running_at FROM bets b JOIN rounds r ON r.id = b.round_id
       WHERE b.operator_id = ? AND b.player = ? AND b.game = 'crash' AND b.status = 'cashed_out'
         AND b.cashout_kind = 'manual'
         AND b.placed_at > ? ORDER BY b.placed_at DESC, b.id LIMIT ?`,
      [claim.operatorId, betRow!.player, plan.timing.since, plan.timing.streak],
    );
    if (plan.timing.decide(recent)) throw new FullPathNeeded('machine timing rule hit');
  }
  recordOperatorEventSync(tx, plan.event, claim.now);
  return { outcome: 'settled' };
}
