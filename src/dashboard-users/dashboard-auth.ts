import { hash, verify } from '@node-rs/argon2';
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../clock/clock';
import { DomainError } from '../errors/codes';
import type { Database } from '../store/database';
import { dashboardUserRepository as users, type DashboardUserRow } from './dashboard-user-repository';

/** A person who signs in to the partner dashboard; each belongs to exactly one operator. */
export interface DashboardUser {
  id: string;
  operatorId: string;
  email: string;
  createdAt: number;
}

export interface DashboardSession {
  user: DashboardUser;
  csrfToken: string;
  expiresAt: number;
}

/**
 * Sign-in throttling, per client address and per account (the dashboard's LoginThrottle: in
 * memory, or shared across instances in Redis). Each call may fail when shared state is unreachable.
 */
export interface SignInThrottle {
  /**
   * Seconds this address or account must wait before its next try; 0: go ahead. `device`: the id in a
   * valid device cookie of this account, whose browser others' failures on the account do not hold back.
   */
  waitSeconds(clientAddress: string, email: string, device: string | null): Promise<number>;
  noteFailure(clientAddress: string, email: string, device: string | null): Promise<void>;
  noteSuccess(email: string, device: string | null): Promise<void>;
}

/** Authenticated encryption (the master-key box): what it seals cannot be read or forged without the key. */
export interface Sealer {
  seal(plaintext: string): string;
  /** Throws on anything it did not seal. */
  open(sealed: string): string;
}

/**
 * How long a device cookie (proof that this browser signed in to the account before) is honoured;
 * each sign-in with it issues a fresh one.
 */
export const DEVICE_COOKIE_TTL_MS = 90 * 86_400_000;

/** What a device cookie holds, sealed: the account it signed in to, a random device id, and when. */
interface DeviceClaim {
  email: string;
  device: string;
  issuedAt: number;
}

/** Sessions end this long after sign-in, whatever the activity: a stolen cookie does not live forever. */
export const DASHBOARD_SESSION_TTL_MS = 8 * 3600_000;
export const MIN_PASSWORD_LENGTH = 12;
const MAX_PASSWORD_LENGTH = 1024;
const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;

/** The cookie carries the session id; the table holds only its hash, so a read of the table opens nothing. */
export const hashSessionId = (id: string): string => createHash('sha256').update(id).digest('hex');

export function normaliseEmail(raw: string): string {
  const email = raw.trim().toLowerCase();
  if (!EMAIL.test(email)) throw new DomainError('VALIDATION_FAILED', `"${raw.slice(0, 100)}" is not an email address`);
  return email;
}

export function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Sign-in fails closed when the shared throttle cannot be reached: no unthrottled guessing during an outage. */
const throttleUnavailable = (): never => {
  throw new DomainError('SERVICE_UNAVAILABLE', 'sign-in is unavailable for a moment; try again shortly');
};

const toUser = (r: DashboardUserRow): DashboardUser => ({
  id: r.id,
  operatorId: r.operator_id,
  email: r.email,
  createdAt: Number(r.created_at),
});

/**
 * Dashboard users and their sessions. Passwords are hashed with Argon2id (the @node-rs/argon2
 * defaults: 19 MiB, 2 passes, 1 lane, the OWASP baseline); session ids and CSRF tokens are 256-bit
 * random values.
 */
export class DashboardAuth {
  /** Verified against when the email is unknown, so a miss costs as much time as a wrong password. */
  private decoyHash: Promise<string> | null = null;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    /** Shared by every sign-in path of the process (and across instances when it is Redis-backed). */
    private readonly throttle: SignInThrottle,
    /** Seals device cookies, so one cannot be forged or moved to another account. */
    private readonly sealer: Sealer,
  ) {}

  async createUser(input: { operatorId: string; email: string; password: string }): Promise<DashboardUser> {
    const email = normaliseEmail(input.email);
    if (input.password.length < MIN_PASSWORD_LENGTH || input.password.length > MAX_PASSWORD_LENGTH) {
      throw new DomainError(
        'VALIDATION_FAILED',
        `the password must be ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters long`,
      );
    }
    const passwordHash = await hash(input.password);
    const user: DashboardUser = {
      id: `du_${randomUUID()}`,
      operatorId: input.operatorId,
      email,
      createdAt: this.clock.now(),
    };
    await this.db.transaction((tx) =>
      users.insert(tx, { id: user.id, operator_id: user.operatorId, email, created_at: user.createdAt }, passwordHash),
    );
    return user;
  }

  async listUsers(operatorId?: string): Promise<DashboardUser[]> {
    const rows = await users.list(this.db, operatorId);
    return rows.map(toUser);
  }

  /** Removes the user and signs out every session it had. */
  async deleteUser(email: string): Promise<DashboardUser> {
    const row = await users.byEmail(this.db, normaliseEmail(email));
    if (!row) throw new DomainError('NOT_FOUND', `no dashboard user with email ${email}`);
    await this.db.transaction((tx) => users.delete(tx, row.id));
    return toUser(row);
  }

  /**
   * Checks the credentials and opens a session. One message for every failure (unknown email,
   * wrong password) so the form does not tell which emails exist; a throttled try is refused with
   * RATE_LIMITED and the wait, before any password work, whether or not the email exists.
   * `deviceCookie`: what the browser kept from an earlier sign-in; a success returns the next one.
   */
  async signIn(
    emailRaw: string,
    password: string,
    clientAddress = 'unknown',
    deviceCookie?: string,
  ): Promise<{ sessionId: string; session: DashboardSession; deviceCookie: string }> {
    const email = emailRaw.trim().toLowerCase().slice(0, 320);
    const now = this.clock.now();
    const device = this.deviceOf(deviceCookie, email, now);
    const wait = await this.throttle.waitSeconds(clientAddress, email, device).catch(throttleUnavailable);
    if (wait > 0) {
      throw new DomainError('RATE_LIMITED', `too many failed sign-ins: try again in ${wait} s`, {
        retryAfterSeconds: wait,
      });
    }
    const row = await users.byEmail(this.db, email);
    const ok = password.length <= MAX_PASSWORD_LENGTH && (await this.check(row?.password_hash, password));
    if (!row || !ok) {
      await this.throttle.noteFailure(clientAddress, email, device).catch(throttleUnavailable);
      throw new DomainError('MISSING_CREDENTIALS', 'wrong email or password');
    }
    await this.throttle.noteSuccess(email, device).catch(throttleUnavailable);
    const sessionId = randomBytes(32).toString('base64url');
    const csrfToken = randomBytes(32).toString('base64url');
    const expiresAt = now + DASHBOARD_SESSION_TTL_MS;
    await this.db.transaction((tx) =>
      users.openSession(tx, { idHash: hashSessionId(sessionId), userId: row.id, csrfToken, now, expiresAt }),
    );
    const nextDevice: DeviceClaim = { email, device: device ?? randomBytes(16).toString('base64url'), issuedAt: now };
    return {
      sessionId,
      session: { user: toUser(row), csrfToken, expiresAt },
      deviceCookie: this.sealer.seal(JSON.stringify(nextDevice)),
    };
  }

  /** The device id of a cookie this service sealed for this account and that has not expired; else null. */
  private deviceOf(cookie: string | undefined, email: string, now: number): string | null {
    if (!cookie || cookie.length > 512) return null;
    try {
      const claim = JSON.parse(this.sealer.open(cookie)) as Partial<DeviceClaim>;
      const fresh = typeof claim.issuedAt === 'number' && now - claim.issuedAt < DEVICE_COOKIE_TTL_MS;
      return claim.email === email && fresh && typeof claim.device === 'string' ? claim.device : null;
    } catch {
      return null;
    }
  }

  /** The live session a cookie value opens, or null. */
  async session(sessionId: string | undefined): Promise<DashboardSession | null> {
    if (!sessionId || !/^[A-Za-z0-9_-]{43}$/.test(sessionId)) return null;
    const row = await users.session(this.db, hashSessionId(sessionId));
    if (!row || Number(row.expires_at) <= this.clock.now()) return null;
    return { user: toUser(row), csrfToken: row.csrf_token, expiresAt: Number(row.expires_at) };
  }

  async signOut(sessionId: string | undefined): Promise<void> {
    if (!sessionId) return;
    await this.db.transaction((tx) => users.deleteSession(tx, hashSessionId(sessionId)));
  }

  private async check(stored: string | undefined, password: string): Promise<boolean> {
    if (stored) return verify(stored, password).catch(() => false);
    this.decoyHash ??= hash(randomBytes(16).toString('hex'));
    await verify(await this.decoyHash, password).catch(() => false);
    return false;
  }
}
