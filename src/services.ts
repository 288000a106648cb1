import type { Logger } from 'pino';
import type { Clock } from './clock/clock';
import type { ChangeBus } from './cluster/change-bus';
import type { ComplianceHooks } from './bets/compliance-hooks';
import type { ComplianceFlags } from './compliance/compliance-flags';
import type { Config } from './config/config';
import type { CrashGame } from './games/crash/crash-game';
import type { DashboardAuth } from './dashboard-users/dashboard-auth';
import type { CrashBetService } from './games/crash/crash-bet-service';
import type { StockRaceBetService } from './games/stock-race/stock-race-bet-service';
import type { AuthFailureLimiter, OperatorRateLimiter } from './admission/rate-limit';
import type { SeenSignatureStore } from './admission/replay-guard';
import type { IdempotencyService } from './idempotency/idempotency';
import type { OperatorService } from './operators/operators';
import type { RoundEngine } from './games/engine/engine';
import type { Readiness } from './ops/readiness';
import type { FairChainService } from './games/engine/fair-chain';
import type { SandboxService } from './sandbox/sandbox-service';
import type { BetService } from './bets/bet-service';
import type { OperatorReports } from './reports/operator-reports';
import type { RoundService } from './games/engine/round-service';
import type { SettlementService } from './wallet/settlement-service';
import type { LiveFeed } from './games/engine/live-feed';
import type { LiveStreams } from './games/engine/live-streams';
import type { SessionService } from './sessions/session-service';
import type { StockRaceGame } from './games/stock-race/stock-race-game';
import type { WalletSettlementWorker } from './wallet/wallet-worker';
import type { WebhookService } from './webhooks/service';

/**
 * Everything the surfaces (HTTP routes, dashboard, player page, CLI) may call, built once by the
 * composition root (src/app.ts). No store handle: a surface reads and writes through these services.
 */
export interface AppServices {
  config: Config;
  clock: Clock;
  logger: Logger;
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
  /** Partner dashboard users, sign-in (throttled per address and account) and sessions. */
  dashboardUsers: DashboardAuth;
  crashGame: CrashGame;
  engines: { crash: RoundEngine; stockRace: RoundEngine };
  stockRaceGame: StockRaceGame;
  sessions: SessionService;
  walletWorker: WalletSettlementWorker;
  feed: LiveFeed;
  /** The live-feed streams this instance holds open: an allowance per holder, closed at shutdown. */
  streams: LiveStreams;
  /** Webhook endpoints, deliveries, re-sends, test events, signature checks (API, CLI, dashboard). */
  webhooks: WebhookService;
  /** Flag listing (both APIs, dashboard, CLI) and player-session sightings (player page). */
  complianceFlags: ComplianceFlags;
  /** Round reads: current, by id or number, recent, recently closed. */
  rounds: RoundService;
  /** Bet reads: by id, filtered lists, a session's bets, counts per round. */
  bets: BetService;
  /** Wallet settlements: reads and the manual "send again now". */
  settlements: SettlementService;
  /** The dashboard's figures: RTP charts, totals, what needs attention. */
  reports: OperatorReports;
  /** Messages between instances (operator changes, live ticks): NOTIFY on PostgreSQL, local on SQLite. */
  bus: ChangeBus;
  /** GET /readyz: start-up done, store and migrations, drain state, and any check added later. */
  readiness: Readiness;
  /** Hash chains: their public records, contributions that fix salts, revealed seeds. */
  fairChains: FairChainService;
  /** Test mode: sandbox operators' own rounds, scripted outcomes, timing and simulated wallet. */
  sandbox: SandboxService;
}
