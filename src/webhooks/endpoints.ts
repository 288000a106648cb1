import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock/clock';
import { DomainError } from '../errors/codes';
import { afterRotation, overlappingSecrets, type SecretBox } from '../operators/secret-box';
import type { Database, SqlExecutor, WriteTransaction } from '../store/database';
import { operatorRepository } from '../operators/operator-repository';
import { type EndpointRow, endpointRepository } from './endpoint-repository';
import { deliveryRepository } from './delivery-repository';
import { generateEndpointSecret } from '../signing/webhook-signature';
import { EVENT_TYPES, type EventType } from './domain-event';
import { checkTargetUrl, type Resolver } from '../outbound/url-safety';

export type EndpointSurface = 'A' | 'B';

export interface WebhookEndpoint {
  id: string;
  operatorId: string;
  url: string;
  surface: EndpointSurface;
  events: EventType[];
  enabled: boolean;
  createdAt: number;
  updatedAt: number;
  /** Until then the previous secret still signs alongside the current one. */
  previousSecretExpiresAt: number | null;
}

export type { EndpointRow } from './endpoint-repository';

export interface EndpointInput {
  url: string;
  events?: readonly string[];
  surface?: EndpointSurface;
  enabled?: boolean;
}

export interface EndpointPatch {
  url?: string;
  events?: readonly string[];
  enabled?: boolean;
}

export const MAX_ENDPOINTS_PER_OPERATOR = 20;

/** Which operator a caller acts for; null is the service's own administration (CLI, operations). */
export type Scope = string | null;

export function toEndpoint(row: EndpointRow): WebhookEndpoint {
  return {
    id: row.id,
    operatorId: row.operator_id,
    url: row.url,
    surface: row.surface === 'B' ? 'B' : 'A',
    events: JSON.parse(row.events) as EventType[],
    enabled: Number(row.enabled) === 1,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    previousSecretExpiresAt: row.previous_secret_expires_at === null ? null : Number(row.previous_secret_expires_at),
  };
}

function parseEvents(events: readonly string[] | undefined): EventType[] {
  if (events === undefined) return [...EVENT_TYPES];
  const unique = [...new Set(events)];
  if (unique.length === 0)
    throw new DomainError('VALIDATION_FAILED', 'field "events" must name at least one event type');
  for (const e of unique) {
    if (!(EVENT_TYPES as readonly string[]).includes(e)) {
      throw new DomainError(
        'VALIDATION_FAILED',
        `field "events" has an unknown event type "${e}"; known: ${EVENT_TYPES.join(', ')}`,
      );
    }
  }
  return EVENT_TYPES.filter((t) => unique.includes(t));
}

/**
 * Webhook endpoints per operator. Secrets are sealed at rest with the operator SecretBox and shown
 * once, when created or rotated. Every query is scoped to the calling operator so one operator can
 * neither see nor change another's endpoints (a foreign id is simply "not found").
 */
export class WebhookEndpointService {
  constructor(
    private readonly db: Database,
    private readonly box: SecretBox,
    private readonly clock: Clock,
    private readonly options: { allowPrivateTargets: boolean; rotationOverlapMs: number; resolve?: Resolver },
  ) {}

  private checkUrl(url: string): Promise<string> {
    return checkTargetUrl(url, {
      allowPrivateTargets: this.options.allowPrivateTargets,
      resolve: this.options.resolve,
    });
  }

  /** Runs a write's one transaction as the store's own, unless the caller hands another (an idempotent retry's). */
  private readonly ownTransaction: WriteTransaction = (work) => this.db.transaction(work);

  async create(
    operatorId: string,
    input: EndpointInput,
    inTx: WriteTransaction = this.ownTransaction,
  ): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
    const url = await this.checkUrl(input.url);
    const events = parseEvents(input.events);
    const surface = input.surface ?? 'A';
    if (surface !== 'A' && surface !== 'B') throw new DomainError('VALIDATION_FAILED', 'surface must be A or B');
    const secret = generateEndpointSecret();
    const now = this.clock.now();
    const id = `we_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
    const endpoint = await inTx(async (tx) => {
      if (!(await operatorRepository.exists(tx, operatorId)))
        throw new DomainError('NOT_FOUND', `no operator with id ${operatorId}`);
      if ((await endpointRepository.countForOperator(tx, operatorId)) >= MAX_ENDPOINTS_PER_OPERATOR) {
        throw new DomainError(
          'VALIDATION_FAILED',
          `an operator may have at most ${MAX_ENDPOINTS_PER_OPERATOR} webhook endpoints`,
        );
      }
      await endpointRepository.insert(tx, {
        id,
        operator_id: operatorId,
        url,
        surface,
        events: JSON.stringify(events),
        enabled: input.enabled === false ? 0 : 1,
        secret_enc: this.box.seal(secret),
        created_at: now,
        updated_at: now,
      });
      return toEndpoint(await this.row(operatorId, id, tx));
    });
    return { endpoint, secret };
  }

  async list(operatorId: string): Promise<WebhookEndpoint[]> {
    const rows = await endpointRepository.listForOperator(this.db, operatorId);
    return rows.map(toEndpoint);
  }

  async get(scope: Scope, id: string): Promise<WebhookEndpoint> {
    return toEndpoint(await this.row(scope, id));
  }

  async update(scope: Scope, id: string, patch: EndpointPatch): Promise<WebhookEndpoint> {
    await this.row(scope, id);
    // Checked before the transaction (a URL check may wait on DNS); the fields not in the patch are read
    // inside it, so a change committed meanwhile (a disable, new events) is kept rather than written back.
    const url = patch.url === undefined ? undefined : await this.checkUrl(patch.url);
    const events = patch.events === undefined ? undefined : JSON.stringify(parseEvents(patch.events));
    const now = this.clock.now();
    await this.db.transaction(async (tx) => {
      const current = await endpointRepository.byIdForUpdate(tx, id);
      if (!current) throw endpointNotFound(scope, id);
      const enabled = patch.enabled ?? Number(current.enabled) === 1;
      const change = { url: url ?? current.url, events: events ?? current.events, enabled: enabled ? 1 : 0 };
      await endpointRepository.update(tx, id, change, now);
      // A disabled endpoint receives nothing, including what was queued for it before; one that dropped
      // event types receives nothing more of them.
      if (!enabled) await deliveryRepository.cancelPendingOf(tx, id, 'the endpoint was disabled', now);
      else if (events !== undefined) {
        const kept = new Set(JSON.parse(events) as string[]);
        const dropped = (JSON.parse(current.events) as string[]).filter((type) => !kept.has(type));
        if (dropped.length > 0) await deliveryRepository.cancelPendingOfDroppedTypes(tx, id, dropped, now);
      }
    });
    return this.get(scope, id);
  }

  async delete(scope: Scope, id: string): Promise<void> {
    await this.row(scope, id);
    const now = this.clock.now();
    await this.db.transaction(async (tx) => {
      await deliveryRepository.cancelPendingOf(tx, id, 'the endpoint was deleted', now);
      await endpointRepository.delete(tx, id);
    });
  }

  /**
   * New secret now; the one it replaces keeps signing too until the overlap ends. A rotation made while
   * an earlier overlap still runs keeps that earlier secret to its own end as well: the answer of the first
   * rotation promised it (a double click, or a retry without an Idempotency-Key, must not cut it short).
   * `overlapMs` 0 stops every older secret at once (the rotation after a leak).
   */
  async rotateSecret(
    scope: Scope,
    id: string,
    overlapMs = this.options.rotationOverlapMs,
    inTx: WriteTransaction = this.ownTransaction,
  ): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
    if (!Number.isSafeInteger(overlapMs) || overlapMs < 0)
      throw new DomainError('VALIDATION_FAILED', 'the overlap must be a non-negative integer of milliseconds');
    const current = await this.row(scope, id);
    const secret = generateEndpointSecret();
    const now = this.clock.now();
    const kept = afterRotation(previousSecrets(current), current.secret_enc, now, overlapMs);
    const endpoint = await inTx(async (tx) => {
      const changed = await endpointRepository.rotateSecret(tx, id, {
        secretEnc: this.box.seal(secret),
        previousSecretEnc: kept.stored,
        previousExpiresAt: kept.latestUntil,
        currentSecretEnc: current.secret_enc,
        now,
      });
      if (changed.changes === 0)
        throw new DomainError('ILLEGAL_TRANSITION', 'the secret was rotated concurrently; list the endpoint and retry');
      return toEndpoint(await this.row(scope, id, tx));
    });
    return { endpoint, secret };
  }

  /** The secrets that sign for this endpoint right now: current first, then each earlier one still in its overlap. */
  signingSecrets(row: EndpointRow, now: number): string[] {
    const secrets = [this.box.open(row.secret_enc)];
    for (const p of previousSecrets(row)) if (p.until > now) secrets.push(this.box.open(p.sealed));
    return secrets;
  }

  /** Any operator's endpoint, or undefined: what the dispatcher signs a delivery with. */
  find(id: string): Promise<EndpointRow | undefined> {
    return endpointRepository.byId(this.db, null, id);
  }

  async row(scope: Scope, id: string, db: SqlExecutor = this.db): Promise<EndpointRow> {
    const row = await endpointRepository.byId(db, scope, id);
    if (!row) throw endpointNotFound(scope, id);
    return row;
  }
}

const previousSecrets = (row: EndpointRow) =>
  overlappingSecrets(row.previous_secret_enc, row.previous_secret_expires_at);

function endpointNotFound(scope: Scope, id: string): DomainError {
  return new DomainError(
    'WEBHOOK_ENDPOINT_NOT_FOUND',
    `no webhook endpoint ${id}${scope === null ? '' : ' for this operator'}`,
  );
}
