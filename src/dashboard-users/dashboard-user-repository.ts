import { DomainError } from '../errors/codes';
import type { SqlExecutor } from '../store/database';

export interface DashboardUserRow {
  id: string;
  operator_id: string;
  email: string;
  password_hash: string;
  created_at: number;
}

export interface DashboardSessionRow extends DashboardUserRow {
  csrf_token: string;
  expires_at: number;
}

/** Dashboard users and their sessions (session ids stored as hashes only). */
export const dashboardUserRepository = {
  async byEmail(db: SqlExecutor, email: string): Promise<DashboardUserRow | undefined> {
    return db.get<DashboardUserRow>('SELECT * FROM dashboard_users WHERE email = ?', [email]);
  },

  async list(db: SqlExecutor, operatorId?: string): Promise<DashboardUserRow[]> {
    return operatorId
      ? db.all<DashboardUserRow>('SELECT * FROM dashboard_users WHERE operator_id = ? ORDER BY created_at, id', [
          operatorId,
        ])
      : db.all<DashboardUserRow>('SELECT * FROM dashboard_users ORDER BY created_at, id');
  },

  /** Refuses an unknown operator and an email already taken (by any operator's user). */
  async insert(tx: SqlExecutor, user: Omit<DashboardUserRow, 'password_hash'>, passwordHash: string): Promise<void> {
    const operator = await tx.get('SELECT id FROM operators WHERE id = ?', [user.operator_id]);
    if (!operator) throw new DomainError('NOT_FOUND', `no operator with id ${user.operator_id}`);
    const taken = await tx.get('SELECT id FROM dashboard_users WHERE email = ?', [user.email]);
    if (taken) throw new DomainError('VALIDATION_FAILED', `a dashboard user with email ${user.email} already exists`);
    await tx.run(
      'INSERT INTO dashboard_users (id, operator_id, email, password_hash, created_at) VALUES (?, ?, ?, ?, ?)',
      [user.id, user.operator_id, user.email, passwordHash, user.created_at],
    );
  },

  /** The user and every session it had. */
  async delete(tx: SqlExecutor, userId: string): Promise<void> {
    await tx.run('DELETE FROM dashboard_sessions WHERE user_id = ?', [userId]);
    await tx.run('DELETE FROM dashboard_users WHERE id = ?', [userId]);
  },

  /** Opens a session; the user's expired ones are cleared on the way in, so nothing needs a sweeper. */
  async openSession(
    tx: SqlExecutor,
    s: { idHash: string; userId: string; csrfToken: string; now: number; expiresAt: number },
  ): Promise<void> {
    await tx.run('DELETE FROM dashboard_sessions WHERE user_id = ? AND expires_at <= ?', [s.userId, s.now]);
    await tx.run(
      'INSERT INTO dashboard_sessions (id_hash, user_id, csrf_token, created_at, expires_at) VALUES (?, ?, ?, ?, ?)',
      [s.idHash, s.userId, s.csrfToken, s.now, s.expiresAt],
    );
  },

  /** The session with this id hash and its user, expired or not. */
  async session(db: SqlExecutor, idHash: string): Promise<DashboardSessionRow | undefined> {
    return db.get<DashboardSessionRow>(
      `SELECT u.id, u.operator_id, u.email, u.password_hash, u.created_at, s.csrf_token, s.expires_at
       FROM dashboard_sessions s JOIN dashboard_users u ON u.id = s.user_id WHERE s.id_hash = ?`,
      [idHash],
    );
  },

  async deleteSession(tx: SqlExecutor, idHash: string): Promise<void> {
    await tx.run('DELETE FROM dashboard_sessions WHERE id_hash = ?', [idHash]);
  },
};
