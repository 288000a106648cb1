import type { Logger } from 'pino';
import type { Clock } from '../clock/clock';
import type { Config } from '../config/config';
import type { OperatorService } from '../operators/operators';
import type { SecretBox } from '../operators/secret-box';
import { DomainError } from '../errors/codes';
import type { Database, WriteTransaction } from '../store/database';
import { verifyServiceSignature } from '../signing/webhook-signature';
import { WebhookDeliveryService, type DeliveryFilter, type DeliveryView } from './deliveries';
import { WebhookDispatcher } from './dispatcher';
import {
  WebhookEndpointService,
  type EndpointInput,
  type EndpointPatch,
  type Scope,
  type WebhookEndpoint,
} from './endpoints';
import type { Resolver } from '../outbound/url-safety';

export interface EndpointJson {
  endpoint_id: string;
  operator_id: string;
  url: string;
  surface: 'A' | 'B';
  events: string[];
  enabled: boolean;
  created_at: number;
  updated_at: number;
  previous_secret_expires_at: number | null;
}

export function presentEndpoint(e: WebhookEndpoint): EndpointJson {
  return {
    endpoint_id: e.id,
    operator_id: e.operatorId,
    url: e.url,
    surface: e.surface,
    events: e.events,
    enabled: e.enabled,
    created_at: e.createdAt,
    updated_at: e.updatedAt,
    previous_secret_expires_at: e.previousSecretExpiresAt,
  };
}

export interface SignatureCheck {
  valid: boolean;
  reason?: 'MALFORMED_HEADER' | 'TIMESTAMP_OUTSIDE_TOLERANCE' | 'SIGNATURE_MISMATCH';
  message: string;
  timestamp?: number;
}

/**
 * The webhook pipeline as the rest of the service sees it: endpoint management, the delivery log,
 * re-sends, test pings and signature checks (API routes, admin CLI and dashboard all call these),
 * plus the dispatcher the composition root starts and stops.
 */
export class WebhookService {
  readonly endpoints: WebhookEndpointService;
  readonly deliveries: WebhookDeliveryService;
  readonly dispatcher: WebhookDispatcher;
  private readonly clock: Clock;

  constructor(
    deps: {
      db: Database;
      box: SecretBox;
      clock: Clock;
      logger: Logger;
      operators: OperatorService;
      config: Config;
      resolve?: Resolver;
    },
    private readonly toleranceMs = 300_000,
  ) {
    const { db, box, clock, config } = deps;
    this.clock = clock;
    this.endpoints = new WebhookEndpointService(db, box, clock, {
      allowPrivateTargets: config.webhooks.allowPrivateTargets,
      rotationOverlapMs: config.secretRotationOverlapMs,
      resolve: deps.resolve,
    });
    this.deliveries = new WebhookDeliveryService(db, clock, this.endpoints);
    this.dispatcher = new WebhookDispatcher({
      db,
      clock,
      logger: deps.logger.child({ worker: 'webhooks' }),
      endpoints: this.endpoints,
      operators: deps.operators,
      retryScheduleMs: config.webhooks.retryScheduleMs,
      timeoutMs: config.webhooks.timeoutMs,
      allowPrivateTargets: config.webhooks.allowPrivateTargets,
      maxResponseBytes: config.webhooks.maxResponseBytes,
      resolve: deps.resolve,
      pollIntervalMs: config.webhooks.pollIntervalMs,
    });
  }

  async listEndpoints(operatorId: string): Promise<EndpointJson[]> {
    return (await this.endpoints.list(operatorId)).map(presentEndpoint);
  }

  /**
   * The endpoints as pages, oldest first (created_at, then id), the order the list always had: `limit`
   * of them after the one named by `startingAfter`. An operator has at most MAX_ENDPOINTS_PER_OPERATOR,
   * so the page is cut from the whole list in memory and `hasMore` is exact.
   */
  async endpointPage(
    operatorId: string,
    page: { limit: number; startingAfter?: string },
  ): Promise<{ endpoints: EndpointJson[]; hasMore: boolean }> {
    const all = await this.listEndpoints(operatorId);
    let from = 0;
    if (page.startingAfter !== undefined) {
      const at = all.findIndex((e) => e.endpoint_id === page.startingAfter);
      if (at < 0) {
        // The wording every list of the API gives for a cursor it cannot continue from (docs/decisions.md, Lists).
        throw new DomainError(
          'VALIDATION_FAILED',
          `starting_after: no endpoint ${page.startingAfter} of this operator (give the last endpoint_id of a page)`,
        );
      }
      from = at + 1;
    }
    return { endpoints: all.slice(from, from + page.limit), hasMore: all.length > from + page.limit };
  }

  async getEndpoint(scope: Scope, id: string): Promise<EndpointJson> {
    return presentEndpoint(await this.endpoints.get(scope, id));
  }

  /** The secret is in this answer only: it is stored sealed and never shown again. */
  async createEndpoint(
    operatorId: string,
    input: EndpointInput,
    inTx?: WriteTransaction,
  ): Promise<EndpointJson & { secret: string }> {
    const { endpoint, secret } = await this.endpoints.create(operatorId, input, inTx);
    return { ...presentEndpoint(endpoint), secret };
  }

  async updateEndpoint(scope: Scope, id: string, patch: EndpointPatch): Promise<EndpointJson> {
    const e = await this.endpoints.update(scope, id, patch);
    this.dispatcher.invalidate(id);
    return presentEndpoint(e);
  }

  async deleteEndpoint(scope: Scope, id: string): Promise<void> {
    await this.endpoints.delete(scope, id);
    this.dispatcher.invalidate(id);
  }

  async rotateSecret(
    scope: Scope,
    id: string,
    overlapMs?: number,
    inTx?: WriteTransaction,
  ): Promise<EndpointJson & { secret: string }> {
    const { endpoint, secret } = await this.endpoints.rotateSecret(scope, id, overlapMs, inTx);
    this.dispatcher.invalidate(id);
    return { ...presentEndpoint(endpoint), secret };
  }

  listDeliveries(scope: Scope, filter: DeliveryFilter): Promise<DeliveryView[]> {
    return this.deliveries.list(scope, filter);
  }

  /** The same list as pages: a page of deliveries and whether another follows (`has_more`). */
  deliveryPage(scope: Scope, filter: DeliveryFilter): Promise<{ deliveries: DeliveryView[]; hasMore: boolean }> {
    return this.deliveries.page(scope, filter);
  }

  getDelivery(scope: Scope, id: string) {
    return this.deliveries.get(scope, id);
  }

  resend(scope: Scope, deliveryId: string, inTx?: WriteTransaction): Promise<DeliveryView> {
    return this.deliveries.resend(scope, deliveryId, inTx);
  }

  sendTestEvent(scope: Scope, endpointId: string, inTx?: WriteTransaction): Promise<DeliveryView> {
    return this.deliveries.sendTest(scope, endpointId, inTx);
  }

  /** Reproduces an x-service-signature check for an integrator who cannot do it locally. No side effect. */
  verifySignature(input: { endpointSecret: string; body: string; signature: string }): SignatureCheck {
    const r = verifyServiceSignature({
      secret: input.endpointSecret,
      rawBody: input.body,
      header: input.signature,
      now: this.clock.now(),
      toleranceMs: this.toleranceMs,
    });
    if (r.valid) {
      return {
        valid: true,
        message: 'the signature is valid for this secret and body, and its timestamp is within tolerance',
        timestamp: r.timestamp,
      };
    }
    return {
      valid: false,
      reason: r.reason,
      message: r.message,
      ...(r.timestamp !== undefined ? { timestamp: r.timestamp } : {}),
    };
  }
}
