import type { SqlExecutor } from '../store/database';
import type { PlayerSession } from './session';

export interface SessionRow {
  id: string;
  operator_id: string;
  player_ref: string;
  currency: string;
  return_url: string;
  created_at: number;
  expires_at: number;
}

export function toSession(r: SessionRow): PlayerSession {
  return {
    id: r.id,
    operatorId: r.operator_id,
    playerRef: r.player_ref,
    currency: r.currency,
    returnUrl: r.return_url,
    createdAt: Number(r.created_at),
    expiresAt: Number(r.expires_at),
  };
}

/** Player sessions; a session's token is stored only as its hash. */
export const sessionRepository = {
  async insert(tx: SqlExecutor, session: PlayerSession, tokenHash: string): Promise<void> {
    await tx.run(
      `INSERT INTO sessions (id, operator_id, player_ref, currency, return_url, token_hash, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        session.id,
        session.operatorId,
        session.playerRef,
        session.currency,
        session.returnUrl,
        tokenHash,
        session.createdAt,
        session.expiresAt,
      ],
    );
  },

  async byTokenHash(db: SqlExecutor, tokenHash: string): Promise<PlayerSession | undefined> {
    const row = await db.get<SessionRow>('SELECT * FROM sessions WHERE token_hash = ?', [tokenHash]);
    return row ? toSession(row) : undefined;
  },

  async byId(db: SqlExecutor, id: string): Promise<PlayerSession | undefined> {
    const row = await db.get<SessionRow>('SELECT * FROM sessions WHERE id = ?', [id]);
    return row ? toSession(row) : undefined;
  },
};
