import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import { settlesBy, systemClock, type Clock } from './clock/clock';
import { LocalChangeBus, PostgresChangeBus, type ChangeBus } from './cluster/change-bus';
import { ComplianceService } from './compliance/compliance-service';
import type { ComplianceHooks } from './bets/compliance-hooks';
import type { Config } from './config/config';
import { CrashGame } from './games/crash/crash-game';
import { playerRoutes } from './dashboard/player/player-routes';
import { dashboardRoutes } from './dashboard/plugin';
import { complianceRoutes } from './http/compliance/routes';
import { sandboxRoutes } from './http/sandbox/routes';
import type { Redis } from 'ioredis';
import { LoginThrottle } from './dashboard/login-throttle';
import { DashboardAuth } from './dashboard-users/dashboard-auth';
import { ComplianceFlags } from './compliance/compliance-flags';
import { BetService } from './bets/bet-service';
import { RoundService } from './games/engine/round-service';
import { OperatorReports } from './reports/operator-reports';
import { SettlementService } from './wallet/settlement-service';
import { AuthFailureLimiter, RedisTokenBucketLimiter, TokenBucketLimiter } from './admission/rate-limit';
import { RedisSeenSignatures, type SeenSignatureStore } from './admission/replay-guard';
import { DatabaseReplayRecordHistory, DatabaseSeenSignatures } from './admission/seen-signature-repository';
import { closeRedis, openRedis } from './redis/client';
import { buildHttpServer } from './http/server';
import { surfaceA } from './http/surface-a/routes';
import { surfaceB, surfaceBRoutes } from './http/surface-b/routes';
import { webhookRoutes } from './http/webhooks/routes';
import { IdempotencyService } from './idempotency/idempotency';
import { InstrumentedDatabase } from './observability/instrumented-db';
import { type BetCounters, BetCommands } from './bets/bet-commands';
import { CrashCommands } from './games/crash/crash-bet-commands';
import { CrashBetService } from './games/crash/crash-bet-service';
import { StockRaceCommands } from './games/stock-race/stock-race-bet-commands';
import { StockRaceBetService } from './games/stock-race/stock-race-bet-service';
import { ServiceMetrics } from './observability/metrics';
import { settlementBacklog } from './wallet/settlement-repository';
import { deliveryBacklog } from './webhooks/delivery-repository';
import { installOutboundTracer } from './observability/outbound';
import type { Tracing } from './observability/tracing';
import { OperatorModes } from './operators/operator-mode';
import { OperatorService } from './operators/operators';
import { SecretBox } from './operators/secret-box';
import { clockSkewCheck } from './ops/clock-skew';
import { Readiness } from './ops/readiness';
import { RoundEngine } from './games/engine/engine';
import { FairChainService } from './games/engine/fair-chain';
import { LiveFeed } from './games/engine/live-feed';
import { LiveStreams } from './games/engine/live-streams';
import { SandboxService, type GameSettings } from './sandbox/sandbox-service';
import { simulatedWallet } from './sandbox/simulated-wallet';
import type { AppServices } from './services';
import { SessionService } from './sessions/session-service';
import { StockRaceGame } from './games/stock-race/stock-race-game';
import type { Database } from './store/database';
import { openDatabase, storeLocation } from './store/open';
import { PostgresDatabase } from './store/postgres';
import { WalletSettlementWorker } from './wallet/wallet-worker';
import { configureEventCheck } from './webhooks/event-check';
import { WebhookService } from './webhooks/service';

export interface AppOverrides {
  clock?: Clock;
  logger?: Logger;
  db?: Database;
  /** A Redis connection to use instead of opening one from REDIS_URL (the caller closes it). */
  redis?: Redis;
  /**
   * false: a store (or master key file) that does not exist yet is refused with StoreNotFoundError
   * instead of created. The admin CLI passes it unless told --init.
   */
  createStore?: boolean;
}

export interface App {
  services: AppServices;
  /** The store, for the composition root's own work and for tests; surfaces get services only. */
  db: Database;
  /** The shared Redis connection when REDIS_URL is set (as `db`: not for surfaces). */
  redis: Redis | null;
  http: FastifyInstance;
  /** Starts the engines and background workers (when configured to run them). */
  startBackground(): Promise<void>;
  /**
   * First step of a graceful stop: /readyz answers 503 from now on, while requests are still
   * served, so load balancers take this instance out of rotation before `stop()` closes it.
   */
  drain(): void;
  /** Graceful stop: no new requests, in-flight ones finish, engines and workers stop, store closes. */
  stop(options?: { graceMs?: number }): Promise<void>;
}

/**
 * The service's logger. `destination` defaults to stdout (the service's logs); the admin CLI passes
 * stderr, since its stdout carries the one JSON document scripts parse.
 */
export function createLogger(config: Config, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level: config.logLevel,
      // Secrets never reach the logs, whichever object carries them.
      redact: {
        paths: [
          'req.headers["x-signature"]',
          'req.headers.authorization',
          'req.headers.cookie',
          '*.secret',
          '*.api_secret',
          '*.apiSecret',
          '*.endpoint_secret',
          '*.password',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}

/** What a service process says at start when it runs on PostgreSQL without Redis (null when all is shared). */
export function sharedStateWarning(config: Config): string | null {
  if (!config.databaseUrl || config.redisUrl) return null;
  return (
    'DATABASE_URL is set but REDIS_URL is not: the rate-limit bucket, failed-authentication counts and ' +
    'dashboard sign-in throttling are per process. That is right for one instance only; ' +
    'set REDIS_URL before starting a second instance on this database.'
  );
}

export function secretBoxFor(config: Config, options: { create?: boolean } = {}): SecretBox {
  return config.masterKey ? SecretBox.fromString(config.masterKey) : SecretBox.fromDataDir(config.dataDir, options);
}

/** Which store and master key a configuration uses, for the admin CLI to say before it acts. */
export function storeInUse(config: Config): string {
  const key = config.masterKey ? 'MASTER_KEY' : join(config.dataDir, 'master.key');
  return `${storeLocation(config)}, master key from ${key}`;
}

/** The composition root: the one place that builds and wires every part. */
export async function createApp(config: Config, overrides: AppOverrides = {}): Promise<App> {
  const clock = overrides.clock ?? systemClock;
  const logger = overrides.logger ?? createLogger(config);
  // A payload that misses its schema fails the change in tests and development, and is logged in production.
  configureEventCheck({ mode: config.env === 'production' ? 'log' : 'throw', logger });
  const create = overrides.createStore ?? true;
  const store = overrides.db ?? (await openDatabase(config, { mustExist: !create }));
  // The SDK is imported only when tracing is configured: off means not loaded, not merely idle.
  const tracing: Tracing | null = config.tracing
    ? new (await import('./observability/tracing')).Tracing({ ...config.tracing, dialect: store.dialect })
    : null;
  if (tracing) installOutboundTracer(tracing);
  const metrics = new ServiceMetrics({
    outboxBacklog: (queue) => (queue === 'webhooks' ? deliveryBacklog(store) : settlementBacklog(store)),
    now: () => clock.now(),
    // Read at scrape time, when both engines exist.
    leaders: () => [crashEngine, stockRaceEngine].map((e) => ({ game: e.game, leader: e.isLeader })),
  });
  const db = new InstrumentedDatabase(store, metrics, tracing);
  const redis =
    overrides.redis ?? (config.redisUrl ? await openRedis(config.redisUrl, logger, config.redisKeyPrefix) : null);
  const ownsRedis = !overrides.redis && redis !== null;
  // Instances share PostgreSQL, so they talk over it; an SQLite store has exactly one process.
  const bus: ChangeBus =
    store instanceof PostgresDatabase
      ? new PostgresChangeBus(store, logger.child({ part: 'bus' }))
      : new LocalChangeBus();
  // One master-key box for everything it seals (operator and endpoint secrets, the stored answers that
  // carry one): built once, since without MASTER_KEY it is read from a file.
  let box: SecretBox;
  try {
    box = secretBoxFor(config, { create });
  } catch (error) {
    if (!overrides.db) await store.close();
    throw error;
  }
  const operators = new OperatorService(
    db,
    box,
    clock,
    config.secretRotationOverlapMs,
    { allowPrivateTargets: config.wallet.allowPrivateTargets },
    bus,
    logger.child({ part: 'operators' }),
  );
  // Which operators play in test mode: a cache of the store owned by this app, read by everything
  // that writes bets or events, so sandbox bets stay out of live metrics and their events say livemode: false.
  const modes = new OperatorModes();
  const complianceRules = new ComplianceService({ modes, logger: logger.child({ part: 'compliance' }) });
  const compliance: ComplianceHooks = complianceRules;
  const webhooks = new WebhookService({ db, box, clock, logger, operators, config });
  const chainLengthOf = (game: 'crash' | 'stock_race') =>
    game === 'crash' ? config.crash.chainLength : config.stockRace.chainLength;
  const chain = new FairChainService(db, chainLengthOf, {
    clock,
    logger: logger.child({ part: 'fairness' }),
    autoContribute: config.fairness.autoContribute,
    allowFixtures: config.env === 'test',
  });
  // Each game's settings from configuration, shared by the live engines and every sandbox engine.
  const games: GameSettings = {
    crash: {
      db,
      settingsOf: async (id) => (await operators.get(id)).settings,
      bettingWindowMs: config.crash.bettingWindowMs,
      pauseMs: config.crash.pauseMs,
      tickMs: config.crash.tickMs,
      heartbeatMs: config.crash.heartbeatMs,
      salt: config.crash.salt,
      houseEdgeBp: config.crash.houseEdgeBp,
    },
    stockRace: {
      operatorOf: (tx, id) => operators.get(id, tx),
      symbols: config.stockRace.symbols,
      bettingWindowMs: config.stockRace.bettingWindowMs,
      raceMs: config.stockRace.raceMs,
      pauseMs: config.stockRace.pauseMs,
      tickMs: config.stockRace.tickMs,
      firstSettleDelayMs: config.wallet.retryScheduleMs[0] ?? 0,
    },
  };
  const crashGame = new CrashGame({ ...games.crash, logger: logger.child({ game: 'crash' }), compliance, modes });
  const leaseCheckMs = config.engineLeaseCheckMs;
  const crashEngine = new RoundEngine({
    db,
    clock,
    chain,
    driver: crashGame,
    logger: logger.child({ engine: 'crash' }),
    modes,
    leaseCheckMs,
  });
  const stockRaceGame = new StockRaceGame({
    ...games.stockRace,
    logger: logger.child({ game: 'stock_race' }),
    compliance,
    modes,
  });
  const stockRaceEngine = new RoundEngine({
    db,
    clock,
    chain,
    driver: stockRaceGame,
    logger: logger.child({ engine: 'stock_race' }),
    modes,
    leaseCheckMs,
  });
  const walletWorker = new WalletSettlementWorker({
    db,
    clock,
    logger: logger.child({ worker: 'wallet' }),
    credentialsOf: (id) => operators.credentialsById(id),
    retryScheduleMs: config.wallet.retryScheduleMs,
    timeoutMs: config.wallet.timeoutMs,
    allowPrivateTargets: config.wallet.allowPrivateTargets,
    maxResponseBytes: config.wallet.maxResponseBytes,
    pollIntervalMs: config.wallet.pollIntervalMs,
    simulatedWallet: (s) => simulatedWallet.settle(db, config, s, clock.now()),
  });
  // One process on SQLite: its engines feed its subscribers directly, nothing to fan out.
  const fanOut = bus instanceof PostgresChangeBus ? bus : undefined;
  const feed = new LiveFeed(db, clock, [crashEngine, stockRaceEngine], 500, fanOut);
  const streams = new LiveStreams({ recheckMs: config.liveFeedRecheckMs });
  // Every shared dependency an instance needs to serve correctly gets a readiness check, so a
  // balancer stops routing to an instance that lost one (signed calls fail closed without Redis).
  const readiness = new Readiness(db);
  // Several instances share a PostgreSQL database; an embedded SQLite store has one process and one clock.
  if (db.dialect === 'postgres') readiness.addCheck('clock', clockSkewCheck(db, clock, config.clockSkewMaxMs));
  if (redis) {
    readiness.addCheck('redis', async () => {
      await redis.ping();
    });
  }
  const sandbox = new SandboxService({
    db,
    clock,
    logger: logger.child({ part: 'sandbox' }),
    config,
    operators,
    modes,
    games,
    idleMs: config.sandbox.idleMs,
    runEngines: config.runEngines,
  });
  // The box seals the stored answers that carry a webhook endpoint's secret (create, rotate).
  const idempotency = new IdempotencyService(db, () => clock.now(), box);
  const crashRules = {
    salt: config.crash.salt,
    houseEdgeBp: config.crash.houseEdgeBp,
    engineStaleMs: config.crash.engineStaleMs,
  };
  const counters: BetCounters = {
    betPlaced: (game) => db.countCommitted((m) => m.betPlaced(game)),
    cashedOut: (game, payout, currency) =>
      db.countCommitted((m) => {
        m.betsSettled.inc({ game, outcome: 'cashed_out' });
        if (payout > 0) m.payouts.inc({ game, currency: currency ?? 'none' }, payout);
      }),
  };
  // The one-unit commands on this store, built once: on PostgreSQL they own its batchers, and both
  // games share one BetCommands so that their place-bets keep one call in flight (CallBatcher).
  const betCommands = new BetCommands(db);
  let seenSignatures: SeenSignatureStore = new DatabaseSeenSignatures(db);
  if (redis) {
    const inRedis = new RedisSeenSignatures(redis, () => clock.now());
    await inRedis.open(new DatabaseReplayRecordHistory(db));
    seenSignatures = inRedis;
  }
  const services: AppServices = {
    config,
    clock,
    logger,
    operators,
    idempotency,
    crashBets: new CrashBetService({
      db,
      commands: new CrashCommands(db, betCommands),
      clock,
      idempotency,
      compliance: complianceRules,
      modes,
      rules: crashRules,
      sandbox,
      crashGame,
      counters,
    }),
    stockRaceBets: new StockRaceBetService({
      db,
      commands: new StockRaceCommands(db, betCommands),
      clock,
      idempotency,
      compliance: complianceRules,
      modes,
      sandbox: { touch: (o, g) => sandbox.touch(o, g), debitSimulatedWallet: (...a) => simulatedWallet.debit(...a) },
      counters,
    }),
    compliance,
    limiter: redis ? new RedisTokenBucketLimiter(redis, clock) : new TokenBucketLimiter(clock),
    seenSignatures,
    authFailures: new AuthFailureLimiter(redis, config.authFailureLimit),
    dashboardUsers: new DashboardAuth(db, clock, new LoginThrottle(redis), box),
    crashGame,
    engines: { crash: crashEngine, stockRace: stockRaceEngine },
    stockRaceGame,
    sessions: new SessionService(
      db,
      clock,
      {
        publicBaseUrl: config.publicBaseUrl,
        ttlMs: config.sessionTtlMs,
        allowLoopbackHttp: config.env !== 'production',
      },
      operators,
    ),
    walletWorker,
    feed,
    streams,
    webhooks,
    complianceFlags: new ComplianceFlags(db, complianceRules),
    rounds: new RoundService(db),
    bets: new BetService(db),
    settlements: new SettlementService(db, clock),
    reports: new OperatorReports(db, config, clock),
    bus,
    readiness,
    fairChains: chain,
    sandbox,
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
      { prefix: '/api/public/v1', register: sandboxRoutes(surfaceA) },
      { prefix: '/v1', register: sandboxRoutes(surfaceB) },
      { prefix: '/dashboard', register: dashboardRoutes },
    ],
  });
  // Open live streams end as shutdown begins, so closing the server does not wait on clients that never hang up.
  http.addHook('preClose', async () => streams.closeAll());
  http.addHook('onClose', async () => streams.closeAll());
  let purgeTimer: NodeJS.Timeout | null = null;
  let seenPurgeTimer: NodeJS.Timeout | null = null;

  return {
    services,
    db,
    redis,
    http,
    async startBackground() {
      feed.start();
      // Listening before ready: no operator change made after this instance takes traffic is missed.
      if (bus instanceof PostgresChangeBus) await bus.ready();
      if (!config.runEngines) {
        readiness.markStarted();
        return;
      }
      await crashEngine.start();
      await stockRaceEngine.start();
      sandbox.start();
      await walletWorker.start();
      await webhooks.dispatcher.start();
      purgeTimer = setInterval(() => {
        void services.idempotency
          .purge(clock.now() - config.idempotencyRetentionMs)
          .catch((err) => logger.warn({ err }, 'idempotency purge failed'));
      }, 3600_000);
      purgeTimer.unref();
      // Seen signatures are useless once their timestamp is out of the window: cleared every minute.
      seenPurgeTimer = setInterval(() => {
        void services.seenSignatures
          .purge(clock.now())
          .catch((err) => logger.warn({ err }, 'seen-signature purge failed'));
      }, 60_000);
      seenPurgeTimer.unref();
      await Promise.all([crashEngine.idle(), stockRaceEngine.idle()]);
      readiness.markStarted();
    },
    drain() {
      readiness.markDraining();
    },
    async stop(options: { graceMs?: number } = {}) {
      readiness.markDraining();
      if (purgeTimer) clearInterval(purgeTimer);
      if (seenPurgeTimer) clearInterval(seenPurgeTimer);
      // With a grace period, in-flight requests and outbound calls get that long; then the connections
      // still open are closed and the calls still unanswered released, so the engines still hand over
      // their leases and the process exits cleanly rather than being cut off by the force-exit timer.
      const deadline = options.graceMs === undefined ? null : performance.now() + options.graceMs;
      const closed = http.close();
      if (deadline !== null && !(await settlesBy(closed, deadline))) {
        logger.warn('in-flight requests outlasted the shutdown grace period; closing their connections');
        http.server.closeAllConnections();
      }
      await closed;
      await crashEngine.stop();
      await stockRaceEngine.stop();
      await sandbox.stop();
      await walletWorker.stop(deadline);
      await webhooks.dispatcher.stop(deadline);
      feed.stop();
      await bus.close();
      await db.close();
      if (tracing) {
        installOutboundTracer(null);
        await tracing.shutdown();
      }
      if (ownsRedis) await closeRedis(redis!);
    },
  };
}
