import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock/clock';
import { DomainError } from '../errors/codes';
import type { SecretBox } from '../operators/secret-box';
import type { Database } from '../store/database';
import { generateEndpointSecret } from '../signing/webhook-signature';
import { EVENT_TYPES, type EventType } from './events';
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

export interface EndpointRow {
  id: string;
  operator_id: string;
  url: string;
  surface: string;
  events: string;
  enabled: number;
  secret_enc: string;
  previous_secret_enc: string | null;
  previous_secret_expires_at: number | null;
  created_at: number;
  updated_at: number;
}

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

export function toEndpoint(r: EndpointRow): WebhookEndpoint {
  return {
    id: r.id,
    operatorId: r.operator_id,
    url: r.url,
    surface: r.surface === 'B' ? 'B' : 'A',
    events: JSON.parse(r.events) as EventType[],
    enabled: Number(r.enabled) === 1,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
    previousSecretExpiresAt: r.previous_secret_expires_at === null ? null : Number(r.previous_secret_expires_at),
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

  async create(operatorId: string, input: EndpointInput): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
    const url = await this.checkUrl(input.url);
    const events = parseEvents(input.events);
    const surface = input.surface ?? 'A';
    if (surface !== 'A' && surface !== 'B') throw new DomainError('VALIDATION_FAILED', 'surface must be A or B');
    const secret = generateEndpointSecret();
    const now = this.clock.now();
    const id = `we_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
    await this.db.transaction(async (tx) => {
      const operator = await tx.get<{ id: string }>('SELECT id FROM operators WHERE id = ?', [operatorId]);
      if (!operator) throw new DomainError('NOT_FOUND', `no operator with id ${operatorId}`);
      const count = await tx.get<{ n: number }>('SELECT COUNT(*) AS n FROM webhook_endpoints WHERE operator_id = ?', [
        operatorId,
      ]);
      if (Number(count?.n ?? 0) >= MAX_ENDPOINTS_PER_OPERATOR) {
        throw new DomainError(
          'VALIDATION_FAILED',
          `an operator may have at most ${MAX_ENDPOINTS_PER_OPERATOR} webhook endpoints`,
        );
      }
      await tx.run(
        `INSERT INTO webhook_endpoints (id, operator_id, url, surface, events, enabled, secret_enc, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [
          id,
          operatorId,
          url,
          surface,
          JSON.stringify(events),
          input.enabled === false ? 0 : 1,
          this.box.seal(secret),
          now,
          now,
        ],
      );
    });
    return { endpoint: await this.get(operatorId, id), secret };
  }

  async list(operatorId: string): Promise<WebhookEndpoint[]> {
    const rows = await this.db.all<EndpointRow>(
      'SELECT * FROM webhook_endpoints WHERE operator_id = ? ORDER BY created_at, id',
      [operatorId],
    );
    return rows.map(toEndpoint);
  }

  async get(scope: Scope, id: string): Promise<WebhookEndpoint> {
    return toEndpoint(await this.row(scope, id));
  }

  async update(scope: Scope, id: string, patch: EndpointPatch): Promise<WebhookEndpoint> {
    const current = await this.row(scope, id);
    const url = patch.url === undefined ? current.url : await this.checkUrl(patch.url);
    const events = patch.events === undefined ? (JSON.parse(current.events) as EventType[]) : parseEvents(patch.events);
    const enabled = patch.enabled === undefined ? Number(current.enabled) === 1 : patch.enabled;
    const now = this.clock.now();
    await this.db.transaction(async (tx) => {
      await tx.run('UPDATE webhook_endpoints SET url = ?, events = ?, enabled = ?, updated_at = ? WHERE id = ?', [
        url,
        JSON.stringify(events),
        enabled ? 1 : 0,
        now,
        id,
      ]);
      // A disabled endpoint receives nothing, including what was queued for it before.
      if (!enabled) await this.cancelPending(tx, id, 'the endpoint was disabled', now);
    });
    return this.get(scope, id);
  }

  async delete(scope: Scope, id: string): Promise<void> {
    await this.row(scope, id);
    const now = this.clock.now();
    await this.db.transaction(async (tx) => {
      await this.cancelPending(tx, id, 'the endpoint was deleted', now);
      await tx.run('DELETE FROM webhook_endpoints WHERE id = ?', [id]);
    });
  }

  /** New secret now; the previous one keeps signing too until the overlap ends. */
  async rotateSecret(
    scope: Scope,
    id: string,
    overlapMs = this.options.rotationOverlapMs,
  ): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
    if (!Number.isSafeInteger(overlapMs) || overlapMs < 0)
      throw new DomainError('VALIDATION_FAILED', 'the overlap must be a non-negative integer of milliseconds');
    const current = await this.row(scope, id);
    const secret = generateEndpointSecret();
    const now = this.clock.now();
    const changed = await this.db.transaction((tx) =>
      tx.run(
        `UPDATE webhook_endpoints SET secret_enc = ?, previous_secret_enc = ?, previous_secret_expires_at = ?, updated_at = ?
         WHERE id = ? AND secret_enc = ?`,
        [
          this.box.seal(secret),
          overlapMs > 0 ? current.secret_enc : null,
          overlapMs > 0 ? now + overlapMs : null,
          now,
          id,
          current.secret_enc,
        ],
      ),
    );
    if (changed.changes === 0)
      throw new DomainError('ILLEGAL_TRANSITION', 'the secret was rotated concurrently; list the endpoint and retry');
    return { endpoint: await this.get(scope, id), secret };
  }

  /** The secrets that sign for this endpoint right now: current first, then the previous one during the overlap. */
  signingSecrets(row: EndpointRow, now: number): string[] {
    const secrets = [this.box.open(row.secret_enc)];
    if (
      row.previous_secret_enc &&
      row.previous_secret_expires_at !== null &&
      Number(row.previous_secret_expires_at) > now
    ) {
      secrets.push(this.box.open(row.previous_secret_enc));
    }
    return secrets;
  }

  /** Any operator's endpoint, or undefined: what the dispatcher signs a delivery with. */
  find(id: string): Promise<EndpointRow | undefined> {
    return this.db.get<EndpointRow>('SELECT * FROM webhook_endpoints WHERE id = ?', [id]);
  }

  async row(scope: Scope, id: string): Promise<EndpointRow> {
    const row =
      scope === null
        ? await this.db.get<EndpointRow>('SELECT * FROM webhook_endpoints WHERE id = ?', [id])
        : await this.db.get<EndpointRow>('SELECT * FROM webhook_endpoints WHERE id = ? AND operator_id = ?', [
            id,
            scope,
          ]);
    if (!row)
      throw new DomainError(
        'WEBHOOK_ENDPOINT_NOT_FOUND',
        `no webhook endpoint ${id}${scope === null ? '' : ' for this operator'}`,
      );
    return row;
  }

  private async cancelPending(
    tx: Parameters<Parameters<Database['transaction']>[0]>[0],
    id: string,
    why: string,
    now: number,
  ): Promise<void> {
    await tx.run(
      `UPDATE webhook_deliveries SET status = 'cancelled', last_error = ?, next_attempt_at = NULL, claimed_until = NULL, dead_at = ?
       WHERE endpoint_id = ? AND status = 'pending'`,
      [why, now, id],
    );
  }
}
