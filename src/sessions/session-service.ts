import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Clock } from '../clock/clock';
import { DomainError } from '../errors/codes';
import { isKnownCurrency } from '../money/currency';
import type { Operator } from '../operators/operator';
import type { Database, SqlExecutor } from '../store/database';

/** A player's Stock Race session, created by the operator for a player logged in on its side. */
export interface PlayerSession {
  id: string;
  operatorId: string;
  playerRef: string;
  currency: string;
  returnUrl: string;
  createdAt: number;
  expiresAt: number;
}

export interface LaunchedSession {
  session: PlayerSession;
  launchUrl: string;
}

export interface SessionRow {
  id: string;
  operator_id: string;
  player_ref: string;
  currency: string;
  return_url: string;
  created_at: number;
  expires_at: number;
}

export interface SessionSettings {
  publicBaseUrl: string;
  ttlMs: number;
  /** Outside production, http return URLs are accepted on loopback hosts (local integration work). */
  allowLoopbackHttp: boolean;
}

// 32 random bytes as base64url: what launch() hands out; anything else is refused before a lookup.
const TOKEN = /^[A-Za-z0-9_-]{43}$/;
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** The token travels in the launch URL; only its hash is stored, so a leaked table opens no session. */
export const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');

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

/** Refuses anything but an absolute https URL (http only on a loopback host when allowed). */
export function checkReturnUrl(raw: string, allowLoopbackHttp: boolean): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new DomainError('INVALID_URL', `return_url must be an absolute URL, got ${JSON.stringify(raw.slice(0, 200))}`);
  }
  if (url.protocol === 'https:') return url.toString();
  if (url.protocol === 'http:' && allowLoopbackHttp && LOOPBACK_HOSTS.has(url.hostname)) return url.toString();
  throw new DomainError(
    'INVALID_URL',
    allowLoopbackHttp ? 'return_url must use https (http is accepted only for localhost in development)' : 'return_url must use https',
  );
}

export function checkCurrency(operator: Operator, currency: string): void {
  if (!isKnownCurrency(currency)) {
    throw new DomainError('CURRENCY_NOT_ALLOWED', `${currency} is not an ISO 4217 currency code`, { currency });
  }
  if (!operator.settings.currencies.includes(currency)) {
    throw new DomainError('CURRENCY_NOT_ALLOWED', `this operator is not enabled for ${currency}; allowed: ${operator.settings.currencies.join(', ')}`, {
      currency,
      allowed: operator.settings.currencies,
    });
  }
}

export class SessionService {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly settings: SessionSettings,
  ) {}

  async launch(operator: Operator, input: { playerRef: string; currency: string; returnUrl: string }): Promise<LaunchedSession> {
    checkCurrency(operator, input.currency);
    const returnUrl = checkReturnUrl(input.returnUrl, this.settings.allowLoopbackHttp);
    const token = randomBytes(32).toString('base64url');
    const now = this.clock.now();
    const session: PlayerSession = {
      id: `ses_${randomUUID()}`,
      operatorId: operator.id,
      playerRef: input.playerRef,
      currency: input.currency,
      returnUrl,
      createdAt: now,
      expiresAt: now + this.settings.ttlMs,
    };
    await this.db.transaction((tx) =>
      tx.run(
        `INSERT INTO sessions (id, operator_id, player_ref, currency, return_url, token_hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
        [session.id, session.operatorId, session.playerRef, session.currency, session.returnUrl, hashToken(token), now, session.expiresAt],
      ),
    );
    return { session, launchUrl: `${this.settings.publicBaseUrl}/play?token=${token}` };
  }

  /** The session a player page token opens: SESSION_NOT_FOUND for an unknown token, SESSION_EXPIRED after expires_at. */
  /** `executor`: the player page passes the store's read path, so opening a page never waits for a writer. */
  async byToken(token: string | undefined, executor: SqlExecutor = this.db): Promise<PlayerSession> {
    if (!token || !TOKEN.test(token)) throw new DomainError('SESSION_NOT_FOUND', 'this link does not open a session');
    const row = await executor.get<SessionRow>('SELECT * FROM sessions WHERE token_hash = ?', [hashToken(token)]);
    if (!row) throw new DomainError('SESSION_NOT_FOUND', 'this link does not open a session');
    return assertLive(toSession(row), this.clock.now());
  }
}

export async function sessionById(executor: SqlExecutor, id: string): Promise<PlayerSession | undefined> {
  const row = await executor.get<SessionRow>('SELECT * FROM sessions WHERE id = ?', [id]);
  return row ? toSession(row) : undefined;
}

/** A session may be used up to, not including, its expires_at. */
export function assertLive(session: PlayerSession, now: number): PlayerSession {
  if (now >= session.expiresAt) {
    throw new DomainError('SESSION_EXPIRED', `session ${session.id} expired at ${session.expiresAt}; launch a new one`, { expires_at: session.expiresAt });
  }
  return session;
}
