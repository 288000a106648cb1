/**
 * Named request and response types, picked out of the generated `openapi.ts` (itself generated
 * from the schemas the service validates with), so nothing here is a second hand-written copy.
 */
import type { paths, webhooks } from './openapi.js';

type JsonOf<T> = T extends { content: { 'application/json': infer Body } } ? Body : never;
type Method = 'get' | 'post' | 'patch' | 'delete';
type Operation<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;

export type RequestBodyOf<P extends keyof paths, M extends Method> =
  Operation<P, M> extends { requestBody?: infer R } ? JsonOf<NonNullable<R>> : never;
export type ResponseOf<P extends keyof paths, M extends Method, S extends number = 200> =
  Operation<P, M> extends { responses: infer R } ? (S extends keyof R ? JsonOf<R[S]> : never) : never;
export type QueryOf<P extends keyof paths, M extends Method> =
  Operation<P, M> extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

const A = '/api/public/v1';
type A = typeof A;

// Surface A: Crash.
export type PlaceBetRequest = RequestBodyOf<`${A}/place-bet`, 'post'>;
export type PlacedBet = ResponseOf<`${A}/place-bet`, 'post'>;
export type CashoutRequest = RequestBodyOf<`${A}/cashout`, 'post'>;
export type CashoutResult = ResponseOf<`${A}/cashout`, 'post'>;
export type CrashRound = ResponseOf<`${A}/rounds/current`, 'get'>;
export type CrashBet = ResponseOf<`${A}/bets/{bet_id}`, 'get'>;
/** Filters of `listBets`: external_user_id or round_number (or both) is required. */
export type CrashBetsQuery = NumbersAllowed<QueryOf<`${A}/bets`, 'get'>, 'limit' | 'round_number'>;
/** A page of bets: `data` newest first; `has_more` says whether a next page exists. */
export type CrashBetPage = ResponseOf<`${A}/bets`, 'get'>;
export type SurfaceAErrorBody = ResponseOf<`${A}/place-bet`, 'post', 400>;

// Surface B: Stock Race and the seamless wallet.
export type LaunchSessionRequest = RequestBodyOf<'/v1/sessions/launch', 'post'>;
export type LaunchSessionResult = ResponseOf<'/v1/sessions/launch', 'post'>;
export type ReserveRequest = RequestBodyOf<'/v1/bets/reserve', 'post'>;
export type ReservedBet = ResponseOf<'/v1/bets/reserve', 'post'>;
export type StockRaceRound = ResponseOf<'/v1/rounds/current', 'get'>;
export type StockRaceBet = ResponseOf<'/v1/bets/{bet_id}', 'get'>;
/** Filters of `listBets`: player_ref or round_id (or both) is required. */
export type StockRaceBetsQuery = NumbersAllowed<QueryOf<'/v1/bets', 'get'>, 'limit'>;
/** A page of bets: `data` newest first; `has_more` says whether a next page exists. */
export type StockRaceBetPage = ResponseOf<'/v1/bets', 'get'>;
// A query string carries text, so the schema types numeric parameters as strings; the client
// writes numbers as their digits, and the service asks for integers, so numbers are taken too.
type NumbersAllowed<Q, K extends keyof Q> = Omit<Q, K> & { [P in K]?: Q[P] | number };
export type SettlementsQuery = NumbersAllowed<QueryOf<'/v1/settlements', 'get'>, 'limit'>;
/** A page of settle calls: `settlements` oldest first; `has_more` says whether a next page exists. */
export type SettlementList = ResponseOf<'/v1/settlements', 'get'>;
export type Settlement = SettlementList['settlements'][number];
export type SurfaceBErrorBody = ResponseOf<'/v1/bets/reserve', 'post', 400>;

// Webhook management (the same operations on both surfaces).
export type CreateWebhookEndpointRequest = RequestBodyOf<`${A}/webhook-endpoints`, 'post'>;
export type WebhookEndpointWithSecret = ResponseOf<`${A}/webhook-endpoints`, 'post', 201>;
/** A page of endpoints: `endpoints` oldest first; `has_more` says whether a next page exists. */
export type WebhookEndpointList = ResponseOf<`${A}/webhook-endpoints`, 'get'>;
export type WebhookEndpointsQuery = NumbersAllowed<QueryOf<`${A}/webhook-endpoints`, 'get'>, 'limit'>;
export type WebhookEndpoint = ResponseOf<`${A}/webhook-endpoints/{endpoint_id}`, 'get'>;
export type UpdateWebhookEndpointRequest = RequestBodyOf<`${A}/webhook-endpoints/{endpoint_id}`, 'patch'>;
export type RotateWebhookSecretRequest = RequestBodyOf<`${A}/webhook-endpoints/{endpoint_id}/rotate-secret`, 'post'>;
export type WebhookDelivery = ResponseOf<`${A}/webhook-endpoints/{endpoint_id}/test`, 'post', 202>;
export type WebhookDeliveriesQuery = NumbersAllowed<QueryOf<`${A}/webhook-deliveries`, 'get'>, 'limit' | 'before'>;
/** A page of deliveries: `deliveries` newest first; `has_more` says whether a next page exists. */
export type WebhookDeliveryList = ResponseOf<`${A}/webhook-deliveries`, 'get'>;
export type WebhookDeliveryDetail = ResponseOf<`${A}/webhook-deliveries/{delivery_id}`, 'get'>;
export type VerifySignatureRequest = RequestBodyOf<`${A}/webhooks/verify-signature`, 'post'>;
export type VerifySignatureResult = ResponseOf<`${A}/webhooks/verify-signature`, 'post'>;

/** round.opened, round.closed, bet.settled, compliance.flag or webhook.test. */
export type WebhookEventType = keyof webhooks;

/**
 * The JSON body of a webhook event of type T. Without T: the union of every event, discriminated by
 * `type`, so `switch (event.type)` narrows `event.data`.
 */
export type WebhookEvent<T extends WebhookEventType = WebhookEventType> = {
  [K in T]: NonNullable<webhooks[K]['post']> extends { requestBody?: infer R } ? JsonOf<NonNullable<R>> : never;
}[T];
