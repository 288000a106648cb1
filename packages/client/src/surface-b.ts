import {
  newIdempotencyKey,
  query,
  Transport,
  type ApiResponse,
  type CallOptions,
  type ClientOptions,
} from './transport.js';
import type {
  LaunchSessionRequest,
  LaunchSessionResult,
  ReserveRequest,
  ReservedBet,
  Settlement,
  SettlementList,
  SettlementsQuery,
  StockRaceBet,
  StockRaceBetPage,
  StockRaceBetsQuery,
  StockRaceRound,
} from './types.js';
import { WebhookEndpointsApi } from './webhook-endpoints.js';

const PREFIX = '/v1';

/** A reserve without a key gets a fresh one; pass your own to tie it to your wallet's hold. */
export type ReserveInput = Omit<ReserveRequest, 'idempotency_key'> & { idempotency_key?: string };

/**
 * Surface B, the seamless-wallet operator API (Stock Race). The reserve's `idempotency_key` is a
 * body field: generated when you leave it out, and the same on every retry of the call.
 */
export class StockRaceClient {
  private readonly t: Transport;
  readonly webhooks: WebhookEndpointsApi;

  constructor(options: ClientOptions) {
    this.t = new Transport('B', options);
    this.webhooks = new WebhookEndpointsApi(this.t, PREFIX);
  }

  /** Keyed like every write: a retry after no answer gets the same session and launch URL, not a second one. */
  async launchSession(body: LaunchSessionRequest, options: CallOptions = {}): Promise<LaunchSessionResult> {
    const path = `${PREFIX}/sessions/launch`;
    const idempotencyKey = options.idempotencyKey ?? newIdempotencyKey();
    const sent = { method: 'POST' as const, path, body, idempotencyKey, retrySafe: true, signal: options.signal };
    return (await this.t.send<LaunchSessionResult>(sent)).data;
  }

  async reserve(input: ReserveInput, options: CallOptions = {}): Promise<ReservedBet> {
    return (await this.reserveWithResponse(input, options)).data;
  }

  reserveWithResponse(input: ReserveInput, options: CallOptions = {}): Promise<ApiResponse<ReservedBet>> {
    const body: ReserveRequest = {
      ...input,
      idempotency_key: input.idempotency_key ?? options.idempotencyKey ?? newIdempotencyKey(),
    };
    return this.t.send<ReservedBet>({
      method: 'POST',
      path: `${PREFIX}/bets/reserve`,
      body,
      retrySafe: true,
      signal: options.signal,
    });
  }

  async currentRound(options: CallOptions = {}): Promise<StockRaceRound> {
    return (
      await this.t.send<StockRaceRound>({
        method: 'GET',
        path: `${PREFIX}/rounds/current`,
        retrySafe: true,
        signal: options.signal,
      })
    ).data;
  }

  async round(roundId: string, options: CallOptions = {}): Promise<StockRaceRound> {
    const path = `${PREFIX}/rounds/${encodeURIComponent(roundId)}`;
    return (await this.t.send<StockRaceRound>({ method: 'GET', path, retrySafe: true, signal: options.signal })).data;
  }

  async bet(betId: string, options: CallOptions = {}): Promise<StockRaceBet> {
    const path = `${PREFIX}/bets/${encodeURIComponent(betId)}`;
    return (await this.t.send<StockRaceBet>({ method: 'GET', path, retrySafe: true, signal: options.signal })).data;
  }

  /**
   * One page of your Stock Race bets of a player (`player_ref`) or a round (`round_id`), newest first.
   * While `has_more` is true, the next page is `listBets({ ...filter, starting_after: <last bet_id> })`.
   */
  async listBets(filter: StockRaceBetsQuery, options: CallOptions = {}): Promise<StockRaceBetPage> {
    const path = `${PREFIX}/bets${query(filter)}`;
    return (await this.t.send<StockRaceBetPage>({ method: 'GET', path, retrySafe: true, signal: options.signal })).data;
  }

  /** The settlements of one page (oldest first), without `has_more`: `settlementsPage` gives both. */
  async settlements(filter: SettlementsQuery = {}, options: CallOptions = {}): Promise<Settlement[]> {
    return (await this.settlementsPage(filter, options)).settlements;
  }

  /**
   * One page of the settle calls to your wallet, oldest first. While `has_more` is true, the next page is
   * `settlementsPage({ ...filter, starting_after: <last bet_id> })`.
   */
  async settlementsPage(filter: SettlementsQuery = {}, options: CallOptions = {}): Promise<SettlementList> {
    const path = `${PREFIX}/settlements${query(filter)}`;
    return (await this.t.send<SettlementList>({ method: 'GET', path, retrySafe: true, signal: options.signal })).data;
  }
}
