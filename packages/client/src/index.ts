export { CrashClient } from './surface-a.js';
export { StockRaceClient, type ReserveInput } from './surface-b.js';
export { WebhookEndpointsApi } from './webhook-endpoints.js';
export { BettingApiError, BettingNetworkError, type SurfaceName } from './errors.js';
export type { ApiResponse, CallOptions, ClientOptions, RetryOptions } from './transport.js';
export { signRequest } from './signing.js';
export {
  DEFAULT_TOLERANCE_MS,
  headerValue,
  verifyServiceSignature,
  verifySignedRequest,
  verifyStandardWebhook,
  type HeaderSource,
  type Verification,
  type VerificationFailure,
} from './webhooks.js';
export type * from './types.js';
export type { components, paths, webhooks } from './openapi.js';
