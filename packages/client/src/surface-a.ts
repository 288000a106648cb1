import {
  newIdempotencyKey,
  query,
  Transport,
  type ApiResponse,
  type CallOptions,
  type ClientOptions,
} from './transport.js';
import type {
  CashoutResult,
  CrashBet,
  CrashBetPage,
  CrashBetsQuery,
  CrashRound,
  PlaceBetRequest,
  PlacedBet,
} from './types.js';
import { WebhookEndpointsApi } from './webhook-endpoints.js';

const PREFIX = '/api/public/v1';

/**
 * Surface A, the partner API (Crash). Every call is signed; each POST gets an Idempotency-Key
 * (yours, or a fresh UUID) that every retry of that call reuses, so a bet is placed at most once.
 */
export class CrashClient {
  private readonly t: Transport;
  readonly webhooks: WebhookEndpointsApi;

  constructor(options: ClientOptions) {
    this.t = new Transport('A', options);
    this.webhooks = new WebhookEndpointsApi(this.t, PREFIX);
  }

  async placeBet(body: PlaceBetRequest, options: CallOptions = {}): Promise<PlacedBet> {
    return (await this.placeBetWithResponse(body, options)).data;
  }

  /** The same, with the status, the replay flag and the request id. */
  placeBetWithResponse(body: PlaceBetRequest, options: CallOptions = {}): Promise<ApiResponse<PlacedBet>> {
    const idempotencyKey = options.idempotencyKey ?? newIdempotencyKey();
    return this.t.send<PlacedBet>({
      method: 'POST',
      path: `${PREFIX}/place-bet`,
      body,
      idempotencyKey,
      retrySafe: true,
      signal: options.signal,
    });
  }

  async cashout(betId: string, options: CallOptions = {}): Promise<CashoutResult> {
    const idempotencyKey = options.idempotencyKey ?? newIdempotencyKey();
    const body = { bet_id: betId };
    return (
      await this.t.send<CashoutResult>({
        method: 'POST',
        path: `${PREFIX}/cashout`,
        body,
        idempotencyKey,
        retrySafe: true,
        signal: options.signal,
      })
    ).data;
  }

  async currentRound(options: CallOptions = {}): Promise<CrashRound> {
    return (
      await this.t.send<CrashRound>({
        method: 'GET',
        path: `${PREFIX}/rounds/current`,
        retrySafe: true,
        signal: options.signal,
      })
    ).data;
  }

  async round(roundNumber: number, options: CallOptions = {}): Promise<CrashRound> {
    const path = `${PREFIX}/rounds/${encodeURIComponent(String(roundNumber))}`;
    return (await this.t.send<CrashRound>({ method: 'GET', path, retrySafe: true, signal: options.signal })).data;
  }

  async bet(betId: string, options: CallOptions = {}): Promise<CrashBet> {
    const path = `${PREFIX}/bets/${encodeURIComponent(betId)}`;
    return (await this.t.send<CrashBet>({ method: 'GET', path, retrySafe: true, signal: options.signal })).data;
  }

  /**
   * One page of your Crash bets of a player (`external_user_id`) or a round (`round_number`), newest
   * first. While `has_more` is true, the next page is `listBets({ ...filter, starting_after: <last bet_id> })`.
   */
  async listBets(filter: CrashBetsQuery, options: CallOptions = {}): Promise<CrashBetPage> {
    const path = `${PREFIX}/bets${query(filter)}`;
    return (await this.t.send<CrashBetPage>({ method: 'GET', path, retrySafe: true, signal: options.signal })).data;
  }
}
