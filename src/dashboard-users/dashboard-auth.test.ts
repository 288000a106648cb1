import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/clock';
import { LoginThrottle } from '../dashboard/login-throttle';
import { SecretBox } from '../operators/secret-box';
import type { Database } from '../store/database';
import { freshDatabase, STORES } from '../../test/support/harness';
import { DASHBOARD_SESSION_TTL_MS, DashboardAuth } from './dashboard-auth';

describe.each(STORES)('dashboard users and sessions on %s', (store) => {
  let db: Database;
  let dispose: () => Promise<void>;
  const clock = new FakeClock();
  let auth: DashboardAuth;
  const operatorId = 'op_dash_test';

  beforeAll(async () => {
    const fresh = await freshDatabase(store);
    db = fresh.db;
    dispose = fresh.dispose;
    await db.run(
      `INSERT INTO operators (id, name, api_key, secret_enc, status, settings, created_at, updated_at)
       VALUES (?, 'Op', 'pk_dash', 'x', 'active', '{}', 0, 0)`,
      [operatorId],
    );
    auth = new DashboardAuth(db, clock, new LoginThrottle(null), new SecretBox(randomBytes(32)));
  });
  afterAll(async () => dispose?.());

  it('stores an Argon2id hash, never the password, and normalises the email', async () => {
    const user = await auth.createUser({ operatorId, email: '  Ops@Example.COM ', password: 'correct horse battery' });
    expect(user).toMatchObject({ operatorId, email: 'ops@example.com', createdAt: clock.now() });
    const row = await db.get<{ password_hash: string }>('SELECT password_hash FROM dashboard_users WHERE id = ?', [
      user.id,
    ]);
    expect(row!.password_hash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(row!.password_hash).not.toContain('correct horse battery');
  });

  it('refuses a duplicate email, a short password, an unknown operator and a non-email', async () => {
    await expect(
      auth.createUser({ operatorId, email: 'ops@example.com', password: 'another long password' }),
    ).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
    await expect(auth.createUser({ operatorId, email: 'new@example.com', password: 'short' })).rejects.toMatchObject({
      code: 'VALIDATION_FAILED',
    });
    await expect(
      auth.createUser({ operatorId: 'op_nope', email: 'x@example.com', password: 'long enough password' }),
    ).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(
      auth.createUser({ operatorId, email: 'not an email', password: 'long enough password' }),
    ).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
    expect((await auth.listUsers(operatorId)).map((u) => u.email)).toEqual(['ops@example.com']);
  });

  it('opens a session whose id is stored only as a SHA-256 hash, with its own CSRF token', async () => {
    const { sessionId, session } = await auth.signIn('OPS@example.com', 'correct horse battery');
    expect(sessionId).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(session.csrfToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(session.expiresAt).toBe(clock.now() + DASHBOARD_SESSION_TTL_MS);
    const rows = await db.all<{ id_hash: string; csrf_token: string }>(
      'SELECT id_hash, csrf_token FROM dashboard_sessions',
    );
    expect(rows).toEqual([
      { id_hash: createHash('sha256').update(sessionId).digest('hex'), csrf_token: session.csrfToken },
    ]);
    expect((await auth.session(sessionId))?.user.email).toBe('ops@example.com');
    // One character different (never the same one: an id ending in "A" must not be tried as itself).
    const altered = `${sessionId.slice(0, -1)}${sessionId.endsWith('A') ? 'B' : 'A'}`;
    expect(await auth.session(altered)).toBeNull();
    expect(await auth.session(undefined)).toBeNull();

    clock.advance(DASHBOARD_SESSION_TTL_MS - 1);
    expect(await auth.session(sessionId)).not.toBeNull();
    clock.advance(1);
    expect(await auth.session(sessionId)).toBeNull();
  });

  it('signs out by deleting the session row', async () => {
    const { sessionId } = await auth.signIn('ops@example.com', 'correct horse battery');
    await auth.signOut(sessionId);
    expect(await auth.session(sessionId)).toBeNull();
    expect(
      await db.get('SELECT id_hash FROM dashboard_sessions WHERE id_hash = ?', [
        createHash('sha256').update(sessionId).digest('hex'),
      ]),
    ).toBeUndefined();
  });

  it('gives one answer for a wrong password or an unknown email, then makes the account wait, never lock', async () => {
    const wrong = { code: 'MISSING_CREDENTIALS' };
    await expect(auth.signIn('nobody@example.com', 'whatever password', '10.0.0.1')).rejects.toMatchObject(wrong);
    for (let i = 0; i < 5; i++) {
      await expect(auth.signIn('ops@example.com', `wrong ${i}`, '10.0.0.1')).rejects.toMatchObject(wrong);
    }
    // Five free failures: the sixth makes the account wait 1 s before the next try, whoever makes it.
    await expect(auth.signIn('ops@example.com', 'wrong 5', '10.0.0.1')).rejects.toMatchObject(wrong);
    await expect(auth.signIn('ops@example.com', 'correct horse battery', '10.0.0.2')).rejects.toMatchObject({
      code: 'RATE_LIMITED',
      details: { retryAfterSeconds: 1 },
    });
    await new Promise((r) => setTimeout(r, 1_100));
    const signedIn = auth.signIn('ops@example.com', 'correct horse battery', '10.0.0.2');
    await expect(signedIn).resolves.toMatchObject({ session: { user: { email: 'ops@example.com' } } });
  });

  it('deletes a user together with its sessions', async () => {
    const { sessionId } = await auth.signIn('ops@example.com', 'correct horse battery');
    await auth.deleteUser('ops@example.com');
    expect(await auth.session(sessionId)).toBeNull();
    expect(await auth.listUsers()).toEqual([]);
  });
});
