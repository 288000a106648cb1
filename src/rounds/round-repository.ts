import { randomUUID } from 'node:crypto';
import { DomainError } from '../errors/codes';
import { forUpdate, type Lease, type SqlExecutor, nullableNumber } from '../store/database';
import { assertTransition, type Game, type Round, type RoundStatus } from './round';

interface RoundRow {
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
}

function toRound(r: RoundRow): Round {
  return {
    id: r.id,
    game: r.game,
    roundNumber: Number(r.round_number),
    status: r.status,
    seedHash: r.seed_hash,
    seed: r.seed,
    chainId: r.chain_id,
    chainIdx: Number(r.chain_idx),
    openedAt: Number(r.opened_at),
    bettingClosesAt: Number(r.betting_closes_at),
    runningAt: nullableNumber(r.running_at),
    endsAt: nullableNumber(r.ends_at),
    heartbeatAt: nullableNumber(r.heartbeat_at),
    closedAt: nullableNumber(r.closed_at),
    voidedAt: nullableNumber(r.voided_at),
    voidReason: r.void_reason,
    outcome: r.outcome ? JSON.parse(r.outcome) : null,
    settings: JSON.parse(r.settings) as Record<string, unknown>,
  };
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
}

type RoundField = 'running_at' | 'ends_at' | 'heartbeat_at' | 'closed_at' | 'voided_at' | 'void_reason' | 'outcome';

export const roundRepository = {
  async insert(tx: SqlExecutor, input: NewRound): Promise<Round> {
    const last = await tx.get<{ n: number | null }>('SELECT MAX(round_number) AS n FROM rounds WHERE game = ?', [input.game]);
    const roundNumber = Number(last?.n ?? 0) + 1;
    const id = `rnd_${randomUUID()}`;
    await tx.run(
      `INSERT INTO rounds (id, game, round_number, status, seed_hash, seed, chain_id, chain_idx, opened_at, betting_closes_at, settings)
       VALUES (?, ?, ?, 'open', ?, ?, ?, ?, ?, ?, ?)`,
      [id, input.game, roundNumber, input.seedHash, input.seed, input.chainId, input.chainIdx, input.openedAt, input.bettingClosesAt, JSON.stringify(input.settings)],
    );
    return (await roundRepository.byId(tx, id))!;
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

  async byNumber(db: SqlExecutor, game: Game, roundNumber: number): Promise<Round | undefined> {
    const row = await db.get<RoundRow>('SELECT * FROM rounds WHERE game = ? AND round_number = ?', [game, roundNumber]);
    return row ? toRound(row) : undefined;
  },

  /** The newest round of a game, whatever its state. */
  async latest(db: SqlExecutor, game: Game): Promise<Round | undefined> {
    const row = await db.get<RoundRow>('SELECT * FROM rounds WHERE game = ? ORDER BY round_number DESC LIMIT 1', [game]);
    return row ? toRound(row) : undefined;
  },

  async unfinished(db: SqlExecutor, game: Game): Promise<Round[]> {
    const rows = await db.all<RoundRow>(
      `SELECT * FROM rounds WHERE game = ? AND status IN ('open', 'running') ORDER BY round_number`,
      [game],
    );
    return rows.map(toRound);
  },

  async recent(db: SqlExecutor, game: Game | null, limit: number): Promise<Round[]> {
    const rows = game
      ? await db.all<RoundRow>('SELECT * FROM rounds WHERE game = ? ORDER BY round_number DESC LIMIT ?', [game, limit])
      : await db.all<RoundRow>('SELECT * FROM rounds ORDER BY opened_at DESC LIMIT ?', [limit]);
    return rows.map(toRound);
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
    const r = await tx.run(`UPDATE rounds SET ${sets} WHERE id = ? AND status = ?`, [to, ...keys.map((k) => fields[k] ?? null), round.id, round.status]);
    if (r.changes !== 1) {
      throw new DomainError('ILLEGAL_TRANSITION', `round ${round.id} is no longer ${round.status}; cannot move it to ${to}`);
    }
  },
};
