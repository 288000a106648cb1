import { continueAfter, type SqlExecutor } from '../../store/database';
import type { ChainOrigin, ChainRecord } from './chain';
import type { Game } from './round';

const INSERT_BATCH = 500;
const RECORD_COLUMNS =
  'chain_id, game, length, origin, commitment, committed_at, contribution, contributor, contribution_automatic, ' +
  'salt, salt_fixed_at, first_played_idx, first_played_at';

type RecordRow = Record<string, unknown>;

function toRecord(r: RecordRow): ChainRecord {
  const n = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
  return {
    chainId: String(r.chain_id),
    game: r.game as Game,
    length: Number(r.length),
    origin: r.origin as ChainOrigin,
    commitment: String(r.commitment),
    committedAt: Number(r.committed_at),
    contribution: (r.contribution as string | null) ?? null,
    contributor: (r.contributor as string | null) ?? null,
    contributionAutomatic:
      r.contribution_automatic === null || r.contribution_automatic === undefined
        ? null
        : Number(r.contribution_automatic) === 1,
    salt: (r.salt as string | null) ?? null,
    saltFixedAt: n(r.salt_fixed_at),
    firstPlayedIdx: n(r.first_played_idx),
    firstPlayedAt: n(r.first_played_at),
  };
}

/** Where a game is in its current chain: the next index to play, of `length`. */
export interface ChainCursor {
  chainId: string;
  nextIdx: number;
  length: number;
}

/** Hash chains: their seeds, their public records (commitment, salt) and each game's cursor. */
export const chainRepository = {
  async cursor(db: SqlExecutor, game: Game): Promise<ChainCursor | undefined> {
    const row = await db.get<{ chain_id: string; next_idx: number; length: number }>(
      'SELECT chain_id, next_idx, length FROM fair_chain_cursor WHERE game = ?',
      [game],
    );
    return row ? { chainId: row.chain_id, nextIdx: Number(row.next_idx), length: Number(row.length) } : undefined;
  },

  /** The game plays this chain from its start. */
  async setCursor(tx: SqlExecutor, game: Game, chainId: string, length: number): Promise<void> {
    await tx.run('DELETE FROM fair_chain_cursor WHERE game = ?', [game]);
    await tx.run('INSERT INTO fair_chain_cursor (game, chain_id, next_idx, length) VALUES (?, ?, 0, ?)', [
      game,
      chainId,
      length,
    ]);
  },

  /** Moves the cursor past `idx`; false when another writer moved it first. */
  async advanceCursor(tx: SqlExecutor, game: Game, idx: number): Promise<boolean> {
    const r = await tx.run('UPDATE fair_chain_cursor SET next_idx = ? WHERE game = ? AND next_idx = ?', [
      idx + 1,
      game,
      idx,
    ]);
    return r.changes === 1;
  },

  /** Every seed of a new chain, in batches (index order). */
  async insertSeeds(tx: SqlExecutor, game: Game, chainId: string, hashes: readonly string[]): Promise<void> {
    for (let start = 0; start < hashes.length; start += INSERT_BATCH) {
      const slice = hashes.slice(start, start + INSERT_BATCH);
      const values = slice.map(() => '(?, ?, ?, ?)').join(', ');
      await tx.run(
        `INSERT INTO fair_chains (game, chain_id, idx, hash) VALUES ${values}`,
        slice.flatMap((hash, i) => [game, chainId, start + i, hash]),
      );
    }
  },

  async seedAt(db: SqlExecutor, game: Game, chainId: string, idx: number): Promise<string | undefined> {
    const row = await db.get<{ hash: string }>(
      'SELECT hash FROM fair_chains WHERE game = ? AND chain_id = ? AND idx = ?',
      [game, chainId, idx],
    );
    return row?.hash;
  },

  /** A generated chain's public record: its commitment and when it was published, no salt yet. */
  async insertRecord(
    tx: SqlExecutor,
    r: { chainId: string; game: Game; length: number; commitment: string; committedAt: number },
  ): Promise<void> {
    await tx.run(
      `INSERT INTO fair_chain_records (chain_id, game, length, origin, commitment, committed_at)
       VALUES (?, ?, ?, 'generated', ?, ?)`,
      [r.chainId, r.game, r.length, r.commitment, r.committedAt],
    );
  },

  async record(db: SqlExecutor, chainId: string): Promise<ChainRecord | null> {
    const row = await db.get<RecordRow>(`SELECT ${RECORD_COLUMNS} FROM fair_chain_records WHERE chain_id = ?`, [
      chainId,
    ]);
    return row ? toRecord(row) : null;
  },

  /** Newest first; every game's when `game` is absent. */
  async list(db: SqlExecutor, game?: Game): Promise<ChainRecord[]> {
    const rows = game
      ? await db.all<RecordRow>(
          `SELECT ${RECORD_COLUMNS} FROM fair_chain_records WHERE game = ? ORDER BY committed_at DESC, chain_id`,
          [game],
        )
      : await db.all<RecordRow>(
          `SELECT ${RECORD_COLUMNS} FROM fair_chain_records ORDER BY committed_at DESC, chain_id`,
        );
    return rows.map(toRecord);
  },

  /**
   * A page of the same list, newest first by (committed_at DESC, chain_id): `limit` records after
   * `after` (the last record of the previous page), one game's or every game's. Both key columns are
   * fixed when a chain is published, so chains published meanwhile never shift a page.
   */
  async page(
    db: SqlExecutor,
    q: { game?: Game; after?: { committedAt: number; chainId: string }; limit: number },
  ): Promise<ChainRecord[]> {
    const where: string[] = [];
    const params: (string | number)[] = [];
    if (q.game) where.push('game = ?'), params.push(q.game);
    if (q.after) {
      const cursor = { createdAt: q.after.committedAt, id: q.after.chainId };
      continueAfter(where, params, cursor, '', { time: 'committed_at', id: 'chain_id' });
    }
    params.push(q.limit);
    const rows = await db.all<RecordRow>(
      `SELECT ${RECORD_COLUMNS} FROM fair_chain_records${where.length ? ` WHERE ${where.join(' AND ')}` : ''}
       ORDER BY committed_at DESC, chain_id LIMIT ?`,
      params,
    );
    return rows.map(toRecord);
  },

  /** The oldest generated chain of the game never played, other than `exceptChainId`. */
  async oldestUnplayed(db: SqlExecutor, game: Game, exceptChainId: string | null): Promise<ChainRecord | null> {
    const row = await db.get<RecordRow>(
      `SELECT ${RECORD_COLUMNS} FROM fair_chain_records
       WHERE game = ? AND origin = 'generated' AND first_played_idx IS NULL AND chain_id <> ?
       ORDER BY committed_at, chain_id LIMIT 1`,
      [game, exceptChainId ?? ''],
    );
    return row ? toRecord(row) : null;
  },

  /** Sets the salt once (only while it has none); false when it already had one. */
  async fixSalt(
    tx: SqlExecutor,
    chainId: string,
    c: { contribution: string; contributor: string; automatic: boolean; salt: string; at: number },
  ): Promise<boolean> {
    const r = await tx.run(
      `UPDATE fair_chain_records
       SET contribution = ?, contributor = ?, contribution_automatic = ?, salt = ?, salt_fixed_at = ?
       WHERE chain_id = ? AND salt IS NULL`,
      [c.contribution, c.contributor, c.automatic ? 1 : 0, c.salt, c.at, chainId],
    );
    return r.changes === 1;
  },

  /** Records the first index played from the chain (only the first time). */
  async markFirstPlayed(tx: SqlExecutor, chainId: string, idx: number, at: number): Promise<void> {
    await tx.run(
      `UPDATE fair_chain_records SET first_played_idx = ?, first_played_at = ?
       WHERE chain_id = ? AND first_played_idx IS NULL`,
      [idx, at, chainId],
    );
  },
};
