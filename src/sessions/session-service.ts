import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Clock } from '../clock/clock';
import { DomainError } from '../errors/codes';
import { isKnownCurrency } from '../money/currency';
import type { Operator } from '../operators/operator';
import type { OperatorService } from '../operators/operators';
import { readerOf, type Database, type ReadOptions, type SqlExecutor, type WriteTransaction } from '../store/database';
import type { PlayerSession } from './session';
import { sessionRepository } from './session-repository';

export interface LaunchedSession {
  session: PlayerSession;
  launchUrl: string;
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

/** Refuses anything but an absolute https URL (http only on a loopback host when allowed). */
export function checkReturnUrl(raw: string, allowLoopbackHttp: boolean): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new DomainError(
      'INVALID_URL',
      `return_url must be an absolute URL, got ${JSON.stringify(raw.slice(0, 200))}`,
    );
  }
  if (url.protocol === 'https:') return url.toString();
  if (url.protocol === 'http:' && allowLoopbackHttp && LOOPBACK_HOSTS.has(url.hostname)) return url.toString();
  throw new DomainError(
    'INVALID_URL',
    allowLoopbackHttp
      ? 'return_url must use https (http is accepted only for localhost in development)'
      : 'return_url must use https',
  );
}

export function checkCurrency(operator: Operator, currency: string): void {
  if (!isKnownCurrency(currency)) {
    throw new DomainError(
      'CURRENCY_NOT_ALLOWED',
      `${currency} is not a currency in circulation (an ISO 4217 code other than funds, metals and testing codes)`,
      { currency },
    );
  }
  if (!operator.settings.currencies.includes(currency)) {
    throw new DomainError(
      'CURRENCY_NOT_ALLOWED',
      `this operator is not enabled for ${currency}; allowed: ${operator.settings.currencies.join(', ')}`,
      {
        currency,
        allowed: operator.settings.currencies,
      },
    );
  }
}

export class SessionService {
  private readonly ownTransaction: WriteTransaction = (work) => this.db.transaction(work);

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly settings: SessionSettings,
    /** Whether a session's operator is enabled: a disabled operator's players open nothing. */
    private readonly operators: Pick<OperatorService, 'isActive'>,
  ) {}

  /** `inTx`: the transaction to write in (a keyed request claims its Idempotency-Key in the same one). */
  async launch(
    operator: Operator,
    input: { playerRef: string; currency: string; returnUrl: string },
    inTx: WriteTransaction = this.ownTransaction,
  ): Promise<LaunchedSession> {
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
    await inTx((tx) => sessionRepository.insert(tx, session, hashToken(token)));
    return { session, launchUrl: `${this.settings.publicBaseUrl}/play?token=${token}` };
  }

  /**
   * The session a player page token opens: SESSION_NOT_FOUND for an unknown token, OPERATOR_DISABLED
   * while its operator is disabled (an open feed ends on the recheck; its reconnect must not reopen it),
   * SESSION_EXPIRED after expires_at. `readOnly`: the player page reads on the store's read path, so
   * opening a page never waits for a writer.
   */
  async byToken(token: string | undefined, options?: ReadOptions): Promise<PlayerSession> {
    if (!token || !TOKEN.test(token)) throw new DomainError('SESSION_NOT_FOUND', 'this link does not open a session');
    const session = await sessionRepository.byTokenHash(readerOf(this.db, options), hashToken(token));
    if (!session) throw new DomainError('SESSION_NOT_FOUND', 'this link does not open a session');
    if (!(await this.operators.isActive(session.operatorId, options))) {
      throw new DomainError('OPERATOR_DISABLED', 'the operator of this game session is disabled');
    }
    return assertLive(session, this.clock.now());
  }

  /** Where the player goes back to from the session a token opened, expired or not (read-only path). */
  async returnUrlOf(token: string): Promise<string | null> {
    if (!TOKEN.test(token)) return null;
    return (await sessionRepository.byTokenHash(this.db.reads, hashToken(token)))?.returnUrl ?? null;
  }
}

/** A session by id, on the caller's executor (the reserve command's transaction). */
export function sessionById(executor: SqlExecutor, id: string): Promise<PlayerSession | undefined> {
  return sessionRepository.byId(executor, id);
}

/** A session may be used up to, not including, its expires_at. */
export function assertLive(session: PlayerSession, now: number): PlayerSession {
  if (now >= session.expiresAt) {
    throw new DomainError(
      'SESSION_EXPIRED',
      `session ${session.id} expired at ${session.expiresAt}; launch a new one`,
      { expires_at: session.expiresAt },
    );
  }
  return session;
}
