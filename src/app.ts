import type { FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import { systemClock, type Clock } from './clock/clock';
import { ComplianceService } from './compliance/compliance-service';
import type { ComplianceHooks } from './compliance/hooks';
import type { Config } from './config/config';
import { CrashGame } from './crash/crash-game';
import { playerUiRoutes } from './dashboard/player/player-ui-routes';
import { dashboardRoutes } from './dashboard/plugin';
import { complianceRoutes } from './http/compliance/routes';
import { playerRoutes } from './http/player/player-routes';
import { TokenBucketLimiter } from './http/rate-limit';
import { buildHttpServer } from './http/server';
import { surfaceA } from './http/surface-a/routes';
import { surfaceB, surfaceBRoutes } from './http/surface-b/routes';
import { webhookRoutes } from './http/webhooks/routes';
import { IdempotencyService } from './idempotency/idempotency';
import { InstrumentedDatabase } from './observability/instrumented-db';
import { ServiceMetrics } from './observability/metrics';
import { installOutboundTracer } from './observability/outbound';
import type { Tracing } from './observability/tracing';
import { OperatorService } from './operators/operators';
import { SecretBox } from './operators/secret-box';
import { RoundEngine } from './rounds/engine';
import { FairChainService } from './rounds/fair-chain';
import { LiveFeed } from './rounds/live-feed';
import type { AppServices } from './services';
import { SessionService } from './sessions/session-service';
import { StockRaceGame } from './stock-race/stock-race-game';
import type { Database } from './store/database';
import { openDatabase } from './store/open';
import { WalletSettlementWorker } from './wallet/wallet-worker';
import { WebhookService } from './webhooks/service';

export interface AppOverrides {
  clock?: Clock;
  logger?: Logger;
  db?: Database;
}

export interface App {
  services: AppServices;
  http: FastifyInstance;
  /** Starts the engines and background workers (when configured to run them). */
  startBackground(): Promise<void>;
  /** Graceful stop: no new requests, in-flight ones finish, engines and workers stop, store closes. */
  stop(): Promise<void>;
}

export function createLogger(config: Config): Logger {
  return pino({
    level: config.logLevel,
    // Secrets never reach the logs, whichever object carries them.
    redact: {
      paths: ['req.headers["x-signature"]', 'req.headers.authorization', 'req.headers.cookie', '*.secret', '*.api_secret', '*.apiSecret', '*.endpoint_secret', '*.password'],
      censor: '[redacted]',
    },
  });
}

export function secretBoxFor(config: Config): SecretBox {
  return config.masterKey ? SecretBox.fromString(config.masterKey) : SecretBox.fromDataDir(config.dataDir);
}

/** The composition root: the one place that builds and wires every part. */
export async function createApp(config: Config, overrides: AppOverrides = {}): Promise<App> {
  const clock = overrides.clock ?? systemClock;
  const logger = overrides.logger ?? createLogger(config);
  const store = overrides.db ?? (await openDatabase(config));
  // The SDK is imported only when tracing is configured: off means not loaded, not merely idle.
  const tracing: Tracing | null = config.tracing
    ? new (await import('./observability/tracing')).Tracing({ ...config.tracing, dialect: store.dialect })
    : null;
  if (tracing) installOutboundTracer(tracing);
  const metrics = new ServiceMetrics({
    db: store,
    now: () => clock.now(),
    // Read at scrape time, when both engines exist.
    leaders: () => [crashEngine, stockRaceEngine].map((e) => ({ game: e.game, leader: e.isLeader })),
  });
  const db = new InstrumentedDatabase(store, metrics, tracing);
  const operators = new OperatorService(db, secretBoxFor(config), clock, config.secretRotationOverlapMs);
  const complianceFlags = new ComplianceService(logger.child({ part: 'compliance' }));
  const compliance: ComplianceHooks = complianceFlags;
  const webhooks = new WebhookService({ db, box: secretBoxFor(config), clock, logger, operators, config });
  const chain = new FairChainService(db, (game) => (game === 'crash' ? config.crash.chainLength : config.stockRace.chainLength));
  const crashGame = new CrashGame({
    db,
    logger: logger.child({ game: 'crash' }),
    compliance,
    settingsOf: async (id) => (await operators.get(id)).settings,
    bettingWindowMs: config.crash.bettingWindowMs,
    pauseMs: config.crash.pauseMs,
    tickMs: config.crash.tickMs,
    salt: config.crash.salt,
    houseEdgeBp: config.crash.houseEdgeBp,
  });
  const crashEngine = new RoundEngine({ db, clock, chain, driver: crashGame, logger: logger.child({ engine: 'crash' }) });
  const stockRaceGame = new StockRaceGame({
    logger: logger.child({ game: 'stock_race' }),
    compliance,
    operatorOf: (tx, id) => operators.get(id, tx),
    symbols: config.stockRace.symbols,
    bettingWindowMs: config.stockRace.bettingWindowMs,
    raceMs: config.stockRace.raceMs,
    pauseMs: config.stockRace.pauseMs,
    tickMs: config.stockRace.tickMs,
    firstSettleDelayMs: config.wallet.retryScheduleMs[0] ?? 0,
  });
  const stockRaceEngine = new RoundEngine({ db, clock, chain, driver: stockRaceGame, logger: logger.child({ engine: 'stock_race' }) });
  const walletWorker = new WalletSettlementWorker({
    db,
    clock,
    logger: logger.child({ worker: 'wallet' }),
    credentialsOf: (id) => operators.credentialsById(id),
    retryScheduleMs: config.wallet.retryScheduleMs,
    timeoutMs: config.wallet.timeoutMs,
    pollIntervalMs: config.wallet.pollIntervalMs,
  });
  const feed = new LiveFeed(db, clock, [crashEngine, stockRaceEngine]);
  const services: AppServices = {
    config,
    clock,
    logger,
    db,
    operators,
    idempotency: new IdempotencyService(db, () => clock.now()),
    compliance,
    limiter: new TokenBucketLimiter(clock),
    crashGame,
    engines: { crash: crashEngine, stockRace: stockRaceEngine },
    stockRaceGame,
    sessions: new SessionService(db, clock, {
      publicBaseUrl: config.publicBaseUrl,
      ttlMs: config.sessionTtlMs,
      allowLoopbackHttp: config.env !== 'production',
    }),
    walletWorker,
    feed,
    webhooks,
    complianceFlags,
  };
  const http = await buildHttpServer(services, {
    observability: { metrics, tracing, metricsToken: config.metrics.token },
    modules: [
      { prefix: '/v1', register: surfaceBRoutes },
      { prefix: '', register: playerRoutes },
      { prefix: '/api/public/v1', register: webhookRoutes(surfaceA) },
      { prefix: '/v1', register: webhookRoutes(surfaceB) },
      { prefix: '/api/public/v1', register: complianceRoutes(surfaceA) },
      { prefix: '/v1', register: complianceRoutes(surfaceB) },
      { prefix: '/dashboard', register: dashboardRoutes },
      { prefix: '', register: playerUiRoutes },
    ],
  });
  let purgeTimer: NodeJS.Timeout | null = null;

  return {
    services,
    http,
    async startBackground() {
      feed.start();
      if (!config.runEngines) return;
      await crashEngine.start();
      await stockRaceEngine.start();
      walletWorker.start();
      await webhooks.dispatcher.start();
      purgeTimer = setInterval(() => {
        void services.idempotency.purge(clock.now() - config.idempotencyRetentionMs).catch((err) => logger.warn({ err }, 'idempotency purge failed'));
      }, 3600_000);
      purgeTimer.unref();
    },
    async stop() {
      if (purgeTimer) clearInterval(purgeTimer);
      await http.close();
      await crashEngine.stop();
      await stockRaceEngine.stop();
      await walletWorker.stop();
      await webhooks.dispatcher.stop();
      feed.stop();
      await db.close();
      if (tracing) {
        installOutboundTracer(null);
        await tracing.shutdown();
      }
    },
  };
}
