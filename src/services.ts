import type { Logger } from 'pino';
import type { Clock } from './clock/clock';
import type { ChangeBus } from './cluster/change-bus';
import type { ComplianceHooks } from './compliance/hooks';
import type { ComplianceService } from './compliance/compliance-service';
import type { Config } from './config/config';
import type { CrashGame } from './games/crash/crash-game';
import type { CrashBetService } from './games/crash/crash-bet-service';
import type { StockRaceBetService } from './games/stock-race/stock-race-bet-service';
import type { Redis } from 'ioredis';
import type { LoginThrottle } from './dashboard/login-throttle';
import type { AuthFailureLimiter, OperatorRateLimiter } from './http/rate-limit';
import type { SeenSignatureStore } from './http/replay-guard';
import type { IdempotencyService } from './idempotency/idempotency';
import type { OperatorService } from './operators/operators';
import type { RoundEngine } from './games/engine/engine';
import type { Readiness } from './ops/readiness';
import type { FairChainService } from './games/engine/fair-chain';
import type { SandboxService } from './sandbox/sandbox-service';
import type { LiveFeed } from './games/engine/live-feed';
import type { SessionService } from './sessions/session-service';
import type { StockRaceGame } from './games/stock-race/stock-race-game';
import type { Database } from './store/database';
import type { WalletSettlementWorker } from './wallet/wallet-worker';
import type { WebhookService } from './webhooks/service';

/** Everything the HTTP layer may call, built once by the composition root (src/app.ts). */
export interface AppServices {
  config: Config;
  clock: Clock;
  logger: Logger;
  db: Database;
  operators: OperatorService;
  idempotency: IdempotencyService;
  /** Crash's money commands (place a bet, cash out), each one unit of work in the store. */
  crashBets: CrashBetService;
  /** Stock Race's reserve command, one unit of work in the store. */
  stockRaceBets: StockRaceBetService;
  compliance: ComplianceHooks;
  /** Per-operator token bucket: in process, or one bucket across instances in Redis. */
  limiter: OperatorRateLimiter;
  /** Signatures already accepted within the tolerance window (database, or Redis). */
  seenSignatures: SeenSignatureStore;
  /** Failed authentications per client address. */
  authFailures: AuthFailureLimiter;
  /** Dashboard sign-in throttling per address and per account. */
  loginThrottle: LoginThrottle;
  /** The shared Redis connection when REDIS_URL is set. */
  redis: Redis | null;
  crashGame: CrashGame;
  engines: { crash: RoundEngine; stockRace: RoundEngine };
  stockRaceGame: StockRaceGame;
  sessions: SessionService;
  walletWorker: WalletSettlementWorker;
  feed: LiveFeed;
  /** Webhook endpoints, deliveries, re-sends, test events, signature checks (API, CLI, dashboard). */
  webhooks: WebhookService;
  /** The same object as `compliance`, with flag listing and session-place tracking. */
  complianceFlags: ComplianceService;
  /** Messages between instances (operator changes, live ticks): NOTIFY on PostgreSQL, local on SQLite. */
  bus: ChangeBus;
  /** GET /readyz: start-up done, store and migrations, drain state, and any check added later. */
  readiness: Readiness;
  /** Hash chains: their public records, contributions that fix salts, revealed seeds. */
  fairChains: FairChainService;
  /** Test mode: sandbox operators' own rounds, scripted outcomes, timing and simulated wallet. */
  sandbox: SandboxService;
}
