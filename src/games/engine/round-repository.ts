import { randomUUID } from 'node:crypto';
import { DomainError } from '../../errors/codes';
import { forShare, forUpdate, type Lease, type SqlExecutor, nullableNumber } from '../../store/database';
import {
  assertTransition,
  type ClosedRound,
  type Game,
  isCrashOutcome,
  isStockRaceOutcome,
  type OpenRound,
  type Round,
  type RoundScope,
  type RoundStatus,
  type RunningRound,
  type StateWithoutOutcome,
} from './round';

export interface RoundRow {
  id: string;
  game: Game;
  round_number: number;
  status: RoundStatus;
  seed_hash: string;
  seed: string;
  chain_id: string;
  chain_idx: number;
  opened_at: number;
  betting_closes_at: number;
  running_at: number | null;
  ends_at: number | null;
  heartbeat_at: number | null;
  closed_at: number | null;
  voided_at: number | null;
  void_reason: string | null;
  outcome: string | null;
  settings: string;
  operator_id: string | null;
  scripted: number;
}

/** `operator_id IS NULL` for the live world, `operator_id = ?` for a sandbox: every round read is scoped. */
function inScope(scope: RoundScope): { sql: string; params: string[] } {
  return scope === null ? { sql: 'operator_id IS NULL', params: [] } : { sql: 'operator_id = ?', params: [scope] };
}

/** A row that breaks the invariants of its round's state: a defect in whatever wrote it. */
export class RoundRowMisfit extends Error {
  constructor(row: Pick<RoundRow, 'id' | 'game' | 'status'>, why: string) {
    super(`round ${row.id} (${row.game}, ${row.status}) does not fit its type: ${why}`);
    this.name = 'RoundRowMisfit';
  }
}

interface RoundTimes {
  runningAt: number | null;
  endsAt: number | null;
  heartbeatAt: number | null;
  closedAt: number | null;
  voidedAt: number | null;
  outcome: unknown;
}

/**
 * The state of a round that has no outcome (open, running or void), its times checked.
 */
function unclosedState(r: RoundRow, t: RoundTimes): StateWithoutOutcome {
  const { runningAt, endsAt, heartbeatAt, closedAt, voidedAt, outcome } = t;
  const notClosed = { closedAt: null, voidedAt: null, voidReason: null, outcome: null } as const;
  switch (r.status) {
    case 'open':
      if (runningAt !== null || endsAt !== null || heartbeatAt !== null) {
        throw new RoundRowMisfit(r, 'an open round has not run');
      }
      if (closedAt !== null || voidedAt !== null || outcome !== null) {
        throw new RoundRowMisfit(r, 'an open round is not final');
      }
      return { status: r.status, runningAt, endsAt, heartbeatAt, ...notClosed };
    case 'running':
      if (runningAt === null || endsAt === null) {
        throw new RoundRowMisfit(r, 'a running round has its start and end times');
      }
      if (closedAt !== null || voidedAt !== null || outcome !== null) {
        throw new RoundRowMisfit(r, 'a running round is not final');
      }
      return { status: r.status, runningAt, endsAt, heartbeatAt, ...notClosed };
    case 'void':
      if (voidedAt === null || r.void_reason === null)
        throw new RoundRowMisfit(r, 'a void round has its time and reason');
      if (closedAt !== null || outcome !== null) throw new RoundRowMisfit(r, 'a void round has no outcome');
      return {
        status: r.status,
        runningAt,
        endsAt,
        heartbeatAt,
        closedAt,
        voidedAt,
        voidReason: r.void_reason,
        outcome,
      };
    default:
      throw new RoundRowMisfit(r, 'a round is open, running, closed or void');
  }
}

/**
 * The one place a row becomes a round: its status picks the state, whose times are checked, and its
 * game the type of its outcome, which is checked too.
 */
export function toRound(r: RoundRow): Round {
  const base = {
    id: r.id,
    roundNumber: Number(r.round_number),
    seedHash: r.seed_hash,
    seed: r.seed,
    chainId: r.chain_id,
    chainIdx: Number(r.chain_idx),
    openedAt: Number(r.opened_at),
    bettingClosesAt: Number(r.betting_closes_at),
    settings: JSON.parse(r.settings) as Record<string, unknown>,
    operatorId: r.operator_id ?? null,
    scripted: Number(r.scripted ?? 0) === 1,
  };
  const runningAt = nullableNumber(r.running_at);
  const endsAt = nullableNumber(r.ends_at);
  const heartbeatAt = nullableNumber(r.heartbeat_at);
  const closedAt = nullableNumber(r.closed_at);
  const voidedAt = nullableNumber(r.voided_at);
  const outcome: unknown = r.outcome ? JSON.parse(r.outcome) : null;
  // Object.assign onto the fresh base rather than `{ ...base, game, ...state }`: on Node 20's V8 a spread
  // followed by more properties takes a slow runtime path (microseconds a row); the keys' order is the same.
  if (r.status === 'closed') {
    if (runningAt === null || endsAt === null || closedAt === null)
      throw new RoundRowMisfit(r, 'a closed round has run and closed');
    if (voidedAt !== null || r.void_reason !== null) throw new RoundRowMisfit(r, 'a closed round is not void');
    const closed = { status: r.status, runningAt, endsAt, heartbeatAt, closedAt, voidedAt: null, voidReason: null };
    if (r.game === 'crash' && isCrashOutcome(outcome))
      return Object.assign(base, { game: r.game }, closed, { outcome });
    if (r.game === 'stock_race' && isStockRaceOutcome(outcome))
      return Object.assign(base, { game: r.game }, closed, { outcome });
    throw new RoundRowMisfit(r, `a closed round has its game's outcome, not ${r.outcome}`);
  }
  if (r.game !== 'crash' && r.game !== 'stock_race') throw new RoundRowMisfit(r, 'no such game');
  const state = unclosedState(r, { runningAt, endsAt, heartbeatAt, closedAt, voidedAt, outcome });
  return Object.assign(base, { game: r.game }, state);
}

export interface NewRound {
  game: Game;
  seedHash: string;
  seed: string;
  chainId: string;
  chainIdx: number;
  openedAt: number;
  bettingClosesAt: number;
  settings: Record<string, unknown>;
  /** Absent or null: a live round. */
  operatorId?: RoundScope;
}

type RoundField = 'running_at' | 'ends_at' | 'heartbeat_at' | 'closed_at' | 'voided_at' | 'void_reason' | 'outcome';

export const roundRepository = {
  async insert(tx: SqlExecutor, input: NewRound): Promise<OpenRound> {
    const scope = inScope(input.operatorId ?? null);
    const last = await tx.get<{ n: number | null }>(
      `SELECT MAX(round_number) AS n FROM rounds WHERE game = ? AND ${scope.sql}`,
      [input.game, ...scope.params],
    );
    const roundNumber = Number(last?.n ?? 0) + 1;
    const id = `rnd_${randomUUID()}`;
    await tx.run(
      `INSERT INTO rounds (id, game, round_number, status, seed_hash, seed, chain_id, chain_idx, opened_at,
         betting_closes_at, settings, operator_id)
       VALUES (?, ?, ?, 'open', ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        id,
        input.game,
        roundNumber,
        input.seedHash,
        input.seed,
        input.chainId,
        input.chainIdx,
        input.openedAt,
        input.bettingClosesAt,
        JSON.stringify(input.settings),
        input.operatorId ?? null,
      ],
    );
    const created = await roundRepository.byId(tx, id);
    if (created?.status !== 'open') throw new Error(`round ${id} did not read back as an open round`);
    return created;
  },

  async byId(db: SqlExecutor, id: string): Promise<Round | undefined> {
    const row = await db.get<RoundRow>('SELECT * FROM rounds WHERE id = ?', [id]);
    return row ? toRound(row) : undefined;
  },

  /** Locks the row on PostgreSQL so state checks and the change that follows see the same round. */
  async byIdForUpdate(tx: SqlExecutor, id: string): Promise<Round | undefined> {
    const row = await tx.get<RoundRow>(`SELECT * FROM rounds WHERE id = ?${forUpdate(tx)}`, [id]);
    return row ? toRound(row) : undefined;
  },

  /**
   * Holds a shared lock on the round row (PostgreSQL) so the engine's move to `running` waits for the
   * caller's transaction; SQLite has one writer and needs none.
   */
  lockShared(tx: SqlExecutor, id: string): Promise<unknown> {
    return tx.get(`SELECT id FROM rounds WHERE id = ?${forShare(tx)}`, [id]);
  },

  /**
   * The open Crash round of this scope (a sandbox operator's own, or the live one when null), read
   * with a shared lock (see lockShared) by the bet placed in it.
   */
  openCrashRoundForBet(
    tx: SqlExecutor,
    sandboxOperatorId: string | null,
  ): Promise<{ id: string; round_number: number; betting_closes_at: number } | undefined> {
    const sandbox = sandboxOperatorId !== null;
    return tx.get<{ id: string; round_number: number; betting_closes_at: number }>(
      `SELECT id, round_number, betting_closes_at FROM rounds WHERE game = 'crash' AND status = 'open'
     AND ${sandbox ? 'operator_id = ?' : 'operator_id IS NULL'} ORDER BY round_number DESC LIMIT 1${forShare(tx)}`,
      sandbox ? [sandboxOperatorId] : [],
    );
  },

  async byNumber(
    db: SqlExecutor,
    game: Game,
    roundNumber: number,
    scope: RoundScope = null,
  ): Promise<Round | undefined> {
    const s = inScope(scope);
    const row = await db.get<RoundRow>(`SELECT * FROM rounds WHERE game = ? AND round_number = ? AND ${s.sql}`, [
      game,
      roundNumber,
      ...s.params,
    ]);
    return row ? toRound(row) : undefined;
  },

  /** The newest round of a game in one world (live by default), whatever its state. */
  async latest(db: SqlExecutor, game: Game, scope: RoundScope = null): Promise<Round | undefined> {
    const s = inScope(scope);
    const row = await db.get<RoundRow>(
      `SELECT * FROM rounds WHERE game = ? AND ${s.sql} ORDER BY round_number DESC LIMIT 1`,
      [game, ...s.params],
    );
    return row ? toRound(row) : undefined;
  },

  async unfinished(db: SqlExecutor, game: Game, scope: RoundScope = null): Promise<(OpenRound | RunningRound)[]> {
    const s = inScope(scope);
    const rows = await db.all<RoundRow>(
      `SELECT * FROM rounds WHERE game = ? AND ${s.sql} AND status IN ('open', 'running') ORDER BY round_number`,
      [game, ...s.params],
    );
    return rows.map((row) => {
      const round = toRound(row);
      if (round.status === 'open' || round.status === 'running') return round;
      throw new RoundRowMisfit(row, 'read as unfinished');
    });
  },

  async recent(db: SqlExecutor, game: Game | null, limit: number, scope: RoundScope = null): Promise<Round[]> {
    const s = inScope(scope);
    const rows = game
      ? await db.all<RoundRow>(`SELECT * FROM rounds WHERE game = ? AND ${s.sql} ORDER BY round_number DESC LIMIT ?`, [
          game,
          ...s.params,
          limit,
        ])
      : await db.all<RoundRow>(`SELECT * FROM rounds WHERE ${s.sql} ORDER BY opened_at DESC LIMIT ?`, [
          ...s.params,
          limit,
        ]);
    return rows.map(toRound);
  },

  /** The latest closed rounds of a game in one world, newest round number first. */
  async recentlyClosed(db: SqlExecutor, game: Game, limit: number, scope: RoundScope = null): Promise<ClosedRound[]> {
    const s = inScope(scope);
    const rows = await db.all<RoundRow>(
      `SELECT * FROM rounds WHERE game = ? AND status = 'closed' AND ${s.sql} ORDER BY round_number DESC LIMIT ?`,
      [game, ...s.params, limit],
    );
    return rows.map(toRound).filter((r): r is ClosedRound => r.status === 'closed');
  },

  /** The rounds of every game most recently closed in one world, newest close first. */
  async lastClosed(db: SqlExecutor, limit: number, scope: RoundScope = null): Promise<Round[]> {
    const s = inScope(scope);
    const rows = await db.all<RoundRow>(
      `SELECT * FROM rounds WHERE status = 'closed' AND ${s.sql} ORDER BY closed_at DESC LIMIT ?`,
      [...s.params, limit],
    );
    return rows.map(toRound);
  },

  /** The seeds a chain has revealed (closed or voided rounds), in chain order. */
  async revealedSeeds(db: SqlExecutor, chainId: string): Promise<{ idx: number; roundId: string; seed: string }[]> {
    const rows = await db.all<{ id: string; chain_idx: number; seed: string }>(
      `SELECT id, chain_idx, seed FROM rounds WHERE chain_id = ? AND status IN ('closed', 'void') ORDER BY chain_idx`,
      [chainId],
    );
    return rows.map((r) => ({ idx: Number(r.chain_idx), roundId: r.id, seed: r.seed }));
  },

  /** A sandbox round's scripted outcome, fixed when betting closes (seed and settings as played). */
  async markScripted(tx: SqlExecutor, round: Pick<Round, 'id' | 'seed' | 'seedHash' | 'settings'>): Promise<void> {
    await tx.run(
      `UPDATE rounds SET scripted = 1, seed = ?, seed_hash = ?, settings = ? WHERE id = ? AND operator_id IS NOT NULL`,
      [round.seed, round.seedHash, JSON.stringify(round.settings), round.id],
    );
  },

  /**
   * Records that the lease holder is still driving a running round. Written on the lease's own
   * session, so a process that lost the lease cannot vouch for a round any more; a round that is no
   * longer running is left alone. Resolves false when nothing was written.
   */
  async recordHeartbeat(lease: Pick<Lease, 'runAsHolder'>, roundId: string, at: number): Promise<boolean> {
    const sql = `UPDATE rounds SET heartbeat_at = ? WHERE id = ? AND status = 'running'`;
    const r = await lease.runAsHolder(sql, [at, roundId]);
    return r.changes === 1;
  },

  /**
   * Moves a round from one state to the next, refusing anything the state machine forbids and
   * anything another writer got to first (the conditional UPDATE is the arbiter).
   */
  async transition(
    tx: SqlExecutor,
    round: Pick<Round, 'id' | 'status'>,
    to: RoundStatus,
    fields: Partial<Record<RoundField, string | number | null>>,
  ): Promise<void> {
    assertTransition(round.status, to);
    const keys = Object.keys(fields) as (keyof typeof fields)[];
    const sets = ['status = ?', ...keys.map((k) => `${k} = ?`)].join(', ');
    const r = await tx.run(`UPDATE rounds SET ${sets} WHERE id = ? AND status = ?`, [
      to,
      ...keys.map((k) => fields[k] ?? null),
      round.id,
      round.status,
    ]);
    if (r.changes !== 1) {
      throw new DomainError(
        'ILLEGAL_TRANSITION',
        `round ${round.id} is no longer ${round.status}; cannot move it to ${to}`,
      );
    }
  },
};
