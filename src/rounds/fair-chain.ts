import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { generateChain } from '../crash/fairness';
import type { Database, SqlExecutor } from '../store/database';
import type { Game } from './round';

/**
 * Each game draws its round seeds from a pre-generated hash chain played in reverse: the seed_hash
 * published when a round opens is sha256(seed), which is also the seed the previous round of that
 * chain revealed, so every revealed seed proves the commitment made for it and all rounds before it.
 */
export interface ChainSeed {
  chainId: string;
  idx: number;
  seed: string;
  seedHash: string;
}

const INSERT_BATCH = 500;

export class FairChainService {
  constructor(
    private readonly db: Database,
    private readonly lengthFor: (game: Game) => number,
  ) {}

  /** Makes sure the game has a chain with seeds left; generates and stores a new one if not. */
  async ensureChain(game: Game): Promise<void> {
    const cursor = await this.db.get<{ next_idx: number; length: number }>(
      'SELECT next_idx, length FROM fair_chain_cursor WHERE game = ?',
      [game],
    );
    if (cursor && Number(cursor.next_idx) < Number(cursor.length)) return;
    const length = this.lengthFor(game);
    const chainId = `chain_${randomUUID()}`;
    const hashes = generateChain(randomBytes(32).toString('hex'), length);
    await this.db.transaction(async (tx) => {
      for (let start = 0; start < hashes.length; start += INSERT_BATCH) {
        const slice = hashes.slice(start, start + INSERT_BATCH);
        const values = slice.map(() => '(?, ?, ?, ?)').join(', ');
        await tx.run(
          `INSERT INTO fair_chains (game, chain_id, idx, hash) VALUES ${values}`,
          slice.flatMap((hash, i) => [game, chainId, start + i, hash]),
        );
      }
      await tx.run('DELETE FROM fair_chain_cursor WHERE game = ?', [game]);
      await tx.run('INSERT INTO fair_chain_cursor (game, chain_id, next_idx, length) VALUES (?, ?, 0, ?)', [game, chainId, length]);
    });
  }

  /** Takes the next seed inside the transaction that opens the round, so no seed is used twice. */
  async takeSeed(tx: SqlExecutor, game: Game): Promise<ChainSeed> {
    const cursor = await tx.get<{ chain_id: string; next_idx: number; length: number }>(
      'SELECT chain_id, next_idx, length FROM fair_chain_cursor WHERE game = ?',
      [game],
    );
    if (!cursor || Number(cursor.next_idx) >= Number(cursor.length)) {
      throw new Error(`the ${game} hash chain is exhausted; ensureChain must run first`);
    }
    const idx = Number(cursor.next_idx);
    const row = await tx.get<{ hash: string }>('SELECT hash FROM fair_chains WHERE game = ? AND chain_id = ? AND idx = ?', [game, cursor.chain_id, idx]);
    if (!row) throw new Error(`hash chain ${cursor.chain_id} has no entry ${idx}`);
    const r = await tx.run('UPDATE fair_chain_cursor SET next_idx = ? WHERE game = ? AND next_idx = ?', [idx + 1, game, idx]);
    if (r.changes !== 1) throw new Error('hash chain cursor moved concurrently');
    return { chainId: cursor.chain_id, idx, seed: row.hash, seedHash: sha256Hex(row.hash) };
  }

  async remaining(game: Game): Promise<number> {
    const c = await this.db.get<{ next_idx: number; length: number }>('SELECT next_idx, length FROM fair_chain_cursor WHERE game = ?', [game]);
    return c ? Number(c.length) - Number(c.next_idx) : 0;
  }
}

/** The commitment published for a seed: sha256 of its hex text, the same link the chain uses. */
export const sha256Hex = (text: string): string => createHash('sha256').update(text).digest('hex');
