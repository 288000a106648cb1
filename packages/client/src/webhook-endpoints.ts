import { newIdempotencyKey, query, type CallOptions, type Transport } from './transport.js';
import type {
  CreateWebhookEndpointRequest,
  RotateWebhookSecretRequest,
  UpdateWebhookEndpointRequest,
  VerifySignatureRequest,
  VerifySignatureResult,
  WebhookDeliveriesQuery,
  WebhookDelivery,
  WebhookDeliveryList,
  WebhookDeliveryDetail,
  WebhookEndpoint,
  WebhookEndpointList,
  WebhookEndpointsQuery,
  WebhookEndpointWithSecret,
} from './types.js';

const id = encodeURIComponent;

/** Webhook endpoints and deliveries: the same operations under either surface's prefix and signature. */
export class WebhookEndpointsApi {
  constructor(
    private readonly t: Transport,
    private readonly prefix: string,
  ) {}

  /** The answer carries the endpoint secret (whsec_…): the only time the service shows it. */
  async create(body: CreateWebhookEndpointRequest, options: CallOptions = {}): Promise<WebhookEndpointWithSecret> {
    // Keyed: a retry after no answer gets the first answer, never a second endpoint.
    return this.keyedPost<WebhookEndpointWithSecret>(`${this.prefix}/webhook-endpoints`, body, options);
  }

  /** Your endpoints, oldest first: the default page is the whole list (an operator has at most 20). */
  async list(options: CallOptions = {}): Promise<WebhookEndpoint[]> {
    return (await this.listPage({}, options)).endpoints;
  }

  /**
   * One page of your endpoints, oldest first. While `has_more` is true, the next page is
   * `listPage({ ...filter, starting_after: <last endpoint_id> })`.
   */
  async listPage(filter: WebhookEndpointsQuery = {}, options: CallOptions = {}): Promise<WebhookEndpointList> {
    const path = `${this.prefix}/webhook-endpoints${query(filter)}`;
    return (await this.t.send<WebhookEndpointList>({ method: 'GET', path, retrySafe: true, signal: options.signal }))
      .data;
  }

  async get(endpointId: string, options: CallOptions = {}): Promise<WebhookEndpoint> {
    return (
      await this.t.send<WebhookEndpoint>({
        method: 'GET',
        path: `${this.prefix}/webhook-endpoints/${id(endpointId)}`,
        retrySafe: true,
        signal: options.signal,
      })
    ).data;
  }

  async update(
    endpointId: string,
    body: UpdateWebhookEndpointRequest,
    options: CallOptions = {},
  ): Promise<WebhookEndpoint> {
    const path = `${this.prefix}/webhook-endpoints/${id(endpointId)}`;
    return (
      await this.t.send<WebhookEndpoint>({ method: 'PATCH', path, body, retrySafe: true, signal: options.signal })
    ).data;
  }

  async delete(endpointId: string, options: CallOptions = {}): Promise<void> {
    await this.t.send({
      method: 'DELETE',
      path: `${this.prefix}/webhook-endpoints/${id(endpointId)}`,
      retrySafe: true,
      // A retry after a lost answer finds the endpoint gone: that is the delete having worked.
      goneMeansDone: true,
      signal: options.signal,
    });
  }

  /** A new secret; the previous one keeps signing alongside it for `overlap_ms`. */
  async rotateSecret(
    endpointId: string,
    body: RotateWebhookSecretRequest = {},
    options: CallOptions = {},
  ): Promise<WebhookEndpointWithSecret> {
    const path = `${this.prefix}/webhook-endpoints/${id(endpointId)}/rotate-secret`;
    return this.keyedPost<WebhookEndpointWithSecret>(path, body, options);
  }

  async sendTest(endpointId: string, options: CallOptions = {}): Promise<WebhookDelivery> {
    return this.keyedPost<WebhookDelivery>(
      `${this.prefix}/webhook-endpoints/${id(endpointId)}/test`,
      undefined,
      options,
    );
  }

  /** The deliveries of one page (newest first), without `has_more`: `deliveriesPage` gives both. */
  async deliveries(filter: WebhookDeliveriesQuery = {}, options: CallOptions = {}): Promise<WebhookDelivery[]> {
    return (await this.deliveriesPage(filter, options)).deliveries;
  }

  /**
   * One page of your deliveries, newest first. While `has_more` is true, the next page is
   * `deliveriesPage({ ...filter, starting_after: <last delivery_id> })`.
   */
  async deliveriesPage(filter: WebhookDeliveriesQuery = {}, options: CallOptions = {}): Promise<WebhookDeliveryList> {
    const path = `${this.prefix}/webhook-deliveries${query(filter)}`;
    return (await this.t.send<WebhookDeliveryList>({ method: 'GET', path, retrySafe: true, signal: options.signal }))
      .data;
  }

  async delivery(deliveryId: string, options: CallOptions = {}): Promise<WebhookDeliveryDetail> {
    const path = `${this.prefix}/webhook-deliveries/${id(deliveryId)}`;
    return (await this.t.send<WebhookDeliveryDetail>({ method: 'GET', path, retrySafe: true, signal: options.signal }))
      .data;
  }

  async resend(deliveryId: string, options: CallOptions = {}): Promise<WebhookDelivery> {
    return this.keyedPost<WebhookDelivery>(
      `${this.prefix}/webhook-deliveries/${id(deliveryId)}/resend`,
      undefined,
      options,
    );
  }

  /** Asks the service to check an x-service-signature (for a receiver that cannot verify locally). */
  async verifySignature(body: VerifySignatureRequest, options: CallOptions = {}): Promise<VerifySignatureResult> {
    const path = `${this.prefix}/webhooks/verify-signature`;
    return (
      await this.t.send<VerifySignatureResult>({ method: 'POST', path, body, retrySafe: true, signal: options.signal })
    ).data;
  }

  /** A POST under an Idempotency-Key (the caller's, or a new one): every retry of it is the same request. */
  private async keyedPost<T>(path: string, body: unknown, options: CallOptions): Promise<T> {
    const idempotencyKey = options.idempotencyKey ?? newIdempotencyKey();
    const r = await this.t.send<T>({
      method: 'POST',
      path,
      body,
      idempotencyKey,
      retrySafe: true,
      signal: options.signal,
    });
    return r.data;
  }
}
