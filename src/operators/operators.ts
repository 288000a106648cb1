import { randomBytes, randomUUID } from 'node:crypto';
import type { ChangeBus } from '../cluster/change-bus';
import type { Clock } from '../clock/clock';
import { DomainError } from '../errors/codes';
import { readerOf, type Database, type ReadOptions, type SqlExecutor } from '../store/database';
import { checkTargetUrl, type Resolver } from '../outbound/url-safety';
import {
  DEFAULT_OPERATOR_SETTINGS,
  type Operator,
  type OperatorCredentials,
  type OperatorMode,
  type OperatorSettings,
  type OperatorSettingsPatch,
  type OperatorStatus,
} from './operator';
import { operatorRepository as operators, type OperatorChange, type OperatorRow } from './operator-repository';
import { afterRotation, overlappingSecrets, type SecretBox } from './secret-box';
import { applySettingsPatch, settingsFromStore } from './settings-check';

/** Where a warning about an operator's stored settings goes (the app's logger; stderr without one). */
export interface OperatorWarnings {
  warn(fields: Record<string, unknown>, message: string): void;
}

export interface CreatedOperator extends Operator {
  apiSecret: string;
}

const CACHE_TTL_MS = 2_000;

/** Characters (code points, after trimming) an operator name may have: it heads every dashboard page. */
export const MAX_OPERATOR_NAME_LENGTH = 100;

/**
 * The name as stored: trimmed, 1 to MAX_OPERATOR_NAME_LENGTH characters. Control characters (C0, DEL,
 * C1: newlines, escape sequences) and unpaired surrogates are refused rather than stripped, so what
 * the operator typed is what every page shows; PostgreSQL could not store a NUL or a lone surrogate.
 */
export function checkOperatorName(raw: string): string {
  const name = raw.trim();
  if (!name) throw new DomainError('VALIDATION_FAILED', 'name must not be empty');
  if (/\p{Cc}/u.test(name)) throw new DomainError('VALIDATION_FAILED', 'name must not contain control characters');
  if (/\p{Cs}/u.test(name)) throw new DomainError('VALIDATION_FAILED', 'name must be valid Unicode text');
  const length = [...name].length;
  if (length > MAX_OPERATOR_NAME_LENGTH) {
    throw new DomainError(
      'VALIDATION_FAILED',
      `name must be at most ${MAX_OPERATOR_NAME_LENGTH} characters, got ${length}`,
    );
  }
  return name;
}

/** What a wallet_url may point at: the webhook target policy (https, public addresses only). */
export interface WalletUrlPolicy {
  /** Development only: http and loopback/private wallets. */
  allowPrivateTargets: boolean;
  resolve?: Resolver;
}

/**
 * Operators and their credentials. Lookups by API key sit on every request's path, so they are
 * cached briefly. Every change announces itself on the change bus in the transaction that makes it
 * (PostgreSQL NOTIFY, delivered on commit), and every instance drops its cache on hearing it, so a
 * disable or a rotation made anywhere (another instance, the admin CLI) takes effect everywhere
 * within the bus's delivery time. CACHE_TTL_MS only bounds staleness if a message is lost.
 */
export class OperatorService {
  private readonly cache = new Map<string, { at: number; value: OperatorCredentials | null }>();
  /** Bumped on every invalidation: a read that started before one must not refill the cache. */
  private generation = 0;
  /** Stored settings already reported as invalid (operator id and stored text): each is logged once. */
  private readonly reportedSettings = new Set<string>();

  constructor(
    private readonly db: Database,
    private readonly box: SecretBox,
    private readonly clock: Clock,
    private readonly rotationOverlapMs: number,
    // Strict unless told otherwise: a wallet URL is where the service sends money-bearing calls.
    private readonly walletUrlPolicy: WalletUrlPolicy = { allowPrivateTargets: false },
    private readonly bus?: ChangeBus,
    private readonly logger?: OperatorWarnings,
  ) {
    bus?.subscribe('operators', () => this.invalidate());
    bus?.onResync(() => this.invalidate());
  }

  async create(input: {
    name: string;
    walletUrl?: string | null;
    settings?: OperatorSettingsPatch;
    mode?: OperatorMode;
  }): Promise<CreatedOperator> {
    const name = checkOperatorName(input.name);
    const walletUrl = input.walletUrl ? await this.checkWalletUrl(input.walletUrl) : null;
    const id = `op_${randomUUID().replace(/-/g, '').slice(0, 20)}`;
    const mode = input.mode ?? 'live';
    if (mode !== 'live' && mode !== 'test') throw new DomainError('VALIDATION_FAILED', 'mode must be live or test');
    // The prefix tells anyone holding a key which world it plays in, as Stripe's keys do.
    const prefix = mode === 'test' ? 'test_' : '';
    const apiKey = `pk_${prefix}${randomBytes(18).toString('base64url')}`;
    const apiSecret = `sk_${prefix}${randomBytes(32).toString('base64url')}`;
    const settings = applySettingsPatch(DEFAULT_OPERATOR_SETTINGS, input.settings ?? {});
    const now = this.clock.now();
    await this.db.transaction((tx) =>
      operators.insert(tx, {
        id,
        name,
        api_key: apiKey,
        secret_enc: this.box.seal(apiSecret),
        wallet_url: walletUrl,
        mode,
        settings: JSON.stringify(settings),
        created_at: now,
      }),
    );
    return {
      id,
      name,
      apiKey,
      apiSecret,
      walletUrl,
      settlesToWallet: walletUrl !== null,
      status: 'active',
      mode,
      settings,
      createdAt: now,
      previousSecretExpiresAt: null,
    };
  }

  async list(): Promise<Operator[]> {
    const rows = await operators.list(this.db);
    return rows.map((r) => this.toOperator(r));
  }

  async get(id: string, executor: SqlExecutor = this.db): Promise<Operator> {
    const row = await operators.byId(executor, id);
    if (!row) throw new DomainError('NOT_FOUND', `no operator with id ${id}`);
    return this.toOperator(row);
  }

  /**
   * Whether the operator exists and is enabled, read from the store (a disable on any instance shows at
   * once). `readOnly`: on the store's read path, for pages that must never wait for a writer.
   */
  async isActive(id: string, options?: ReadOptions): Promise<boolean> {
    return (await operators.byId(readerOf(this.db, options), id))?.status === 'active';
  }

  /**
   * The cached answer for an API key, without touching the store: undefined when there is none (or it
   * has expired), so the request path can stay synchronous for a known key.
   */
  cachedByApiKey(apiKey: string): OperatorCredentials | null | undefined {
    const hit = this.cache.get(apiKey);
    return hit && this.clock.now() - hit.at < CACHE_TTL_MS ? hit.value : undefined;
  }

  /** Resolves an API key to the operator and every secret that may sign for it right now. */
  async byApiKey(apiKey: string): Promise<OperatorCredentials | null> {
    const now = this.clock.now();
    const hit = this.cache.get(apiKey);
    if (hit && now - hit.at < CACHE_TTL_MS) return hit.value;
    const generation = this.generation;
    const row = await operators.byApiKey(this.db, apiKey);
    const value = row ? this.withSecrets(row, now) : null;
    if (generation !== this.generation) return value;
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(apiKey, { at: now, value });
    return value;
  }

  async credentialsById(id: string): Promise<OperatorCredentials> {
    const row = await operators.byId(this.db, id);
    if (!row) throw new DomainError('NOT_FOUND', `no operator with id ${id}`);
    return this.withSecrets(row, this.clock.now());
  }

  /**
   * New secret now; the old one keeps verifying (and the wallet keeps accepting it) for the overlap, and so
   * does any earlier one still inside the overlap its own rotation promised: a second rotation (a double
   * submit of the dashboard's form) must not lock out servers still signing with the secret before.
   */
  async rotateSecret(
    id: string,
    overlapMs = this.rotationOverlapMs,
  ): Promise<{ apiSecret: string; previousSecretExpiresAt: number }> {
    const current = await operators.byId(this.db, id);
    const apiSecret = `sk_${current?.mode === 'test' ? 'test_' : ''}${randomBytes(32).toString('base64url')}`;
    const now = this.clock.now();
    const expiresAt = now + overlapMs;
    const changed = await this.db.transaction(async (tx) => {
      const row = await operators.byId(tx, id);
      if (!row) return false;
      const kept = afterRotation(
        overlappingSecrets(row.previous_secret_enc, row.previous_secret_expires_at),
        row.secret_enc,
        now,
        overlapMs,
      );
      const secrets = {
        secret_enc: this.box.seal(apiSecret),
        previous_secret_enc: kept.stored,
        previous_secret_expires_at: kept.latestUntil,
      };
      await operators.update(tx, id, secrets, now);
      await this.bus?.publish('operators', id, tx);
      return true;
    });
    if (!changed) throw new DomainError('NOT_FOUND', `no operator with id ${id}`);
    this.invalidate();
    return { apiSecret, previousSecretExpiresAt: expiresAt };
  }

  async setStatus(id: string, status: OperatorStatus): Promise<Operator> {
    await this.update(id, { status });
    return this.get(id);
  }

  async setWalletUrl(id: string, walletUrl: string | null): Promise<Operator> {
    await this.update(
      id,
      walletUrl ? { wallet_url: await this.checkWalletUrl(walletUrl), settles_to_wallet: 1 } : { wallet_url: null },
    );
    return this.get(id);
  }

  /**
   * Applies a settings change (see OperatorSettingsPatch) after checking the settings it leads to
   * against the schema: VALIDATION_FAILED, naming each bad field, and nothing stored otherwise.
   * The type is a hint: the value is checked at run time (the CLI hands over whatever JSON it got).
   */
  async updateSettings(id: string, patch: OperatorSettingsPatch): Promise<Operator> {
    const changed = await this.db.transaction(async (tx) => {
      const row = await operators.byId(tx, id);
      if (!row) return false;
      const next = applySettingsPatch(this.settingsOf(row), patch);
      await operators.update(tx, id, { settings: JSON.stringify(next) }, this.clock.now());
      await this.bus?.publish('operators', id, tx);
      return true;
    });
    if (!changed) throw new DomainError('NOT_FOUND', `no operator with id ${id}`);
    this.invalidate();
    return this.get(id);
  }

  private async update(id: string, change: OperatorChange): Promise<void> {
    const changed = await this.db.transaction(async (tx) => {
      const done = await operators.update(tx, id, change, this.clock.now());
      if (done) await this.bus?.publish('operators', id, tx);
      return done;
    });
    if (!changed) throw new DomainError('NOT_FOUND', `no operator with id ${id}`);
    this.invalidate();
  }

  private invalidate(): void {
    this.generation++;
    this.cache.clear();
  }

  /**
   * Settle calls go to this URL from inside the service's network, so it gets the webhook target
   * policy: https, no credentials, no loopback/private/link-local target (the address is checked
   * again on every connection). A query would end up before the appended /v1/bets/settle: refused.
   */
  private async checkWalletUrl(raw: string): Promise<string> {
    let checked: string;
    try {
      checked = await checkTargetUrl(raw.trim(), this.walletUrlPolicy);
    } catch (error) {
      if (error instanceof DomainError) throw new DomainError(error.code, `wallet_url: ${error.message}`);
      throw error;
    }
    // A bare "?" leaves `search` empty but still ends the path: look at the text (the fragment is dropped).
    if (checked.includes('?')) throw new DomainError('INVALID_URL', 'wallet_url: must not carry a query string');
    return checked.replace(/\/+$/, '');
  }

  private toOperator(row: OperatorRow): Operator {
    return {
      id: row.id,
      name: row.name,
      apiKey: row.api_key,
      walletUrl: row.wallet_url,
      settlesToWallet: Number(row.settles_to_wallet) === 1,
      status: row.status,
      mode: row.mode === 'test' ? 'test' : 'live',
      settings: this.settingsOf(row),
      createdAt: Number(row.created_at),
      previousSecretExpiresAt: row.previous_secret_expires_at === null ? null : Number(row.previous_secret_expires_at),
    };
  }

  /** Stored settings, never invalid ones: a bad key falls back to its default and is logged (once). */
  private settingsOf(row: OperatorRow): OperatorSettings {
    return settingsFromStore(row.settings, (problems) => {
      const seen = `${row.id}:${row.settings}`;
      if (this.reportedSettings.has(seen)) return;
      if (this.reportedSettings.size > 1_000) this.reportedSettings.clear();
      this.reportedSettings.add(seen);
      const message = "operator's stored settings fail the schema; the invalid keys use their defaults";
      if (this.logger) this.logger.warn({ operatorId: row.id, problems }, message);
      else process.emitWarning(`${message} (operator ${row.id}): ${problems.join('; ')}`, 'OperatorSettingsWarning');
    });
  }

  private withSecrets(row: OperatorRow, now: number): OperatorCredentials {
    const secrets = [this.box.open(row.secret_enc)];
    for (const p of overlappingSecrets(row.previous_secret_enc, row.previous_secret_expires_at)) {
      if (p.until > now) secrets.push(this.box.open(p.sealed));
    }
    return { ...this.toOperator(row), secrets };
  }
}
