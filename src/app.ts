import pino, { type Logger } from 'pino';
import type { FastifyInstance } from 'fastify';
import { systemClock, type Clock } from './clock/clock';
import { noCompliance, type ComplianceHooks } from './compliance/hooks';
import type { Config } from './config/config';
import { CrashGame } from './crash/crash-game';
import { TokenBucketLimiter } from './http/rate-limit';
import { buildHttpServer } from './http/server';
import { IdempotencyService } from './idempotency/idempotency';
import { OperatorService } from './operators/operators';
import { SecretBox } from './operators/secret-box';
import { RoundEngine } from './rounds/engine';
import { FairChainService } from './rounds/fair-chain';
import { LiveFeed } from './rounds/live-feed';
import type { AppServices } from './services';
import type { Database } from './store/database';
import { openDatabase } from './store/open';

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
  const db = overrides.db ?? (await openDatabase(config));
  const operators = new OperatorService(db, secretBoxFor(config), clock, config.secretRotationOverlapMs);
  const compliance: ComplianceHooks = noCompliance;
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
  const feed = new LiveFeed(db, clock, [crashEngine]);
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
    engines: { crash: crashEngine },
    feed,
  };
  const http = await buildHttpServer(services);
  let purgeTimer: NodeJS.Timeout | null = null;

  return {
    services,
    http,
    async startBackground() {
      feed.start();
      if (!config.runEngines) return;
      await crashEngine.start();
      purgeTimer = setInterval(() => {
        void services.idempotency.purge(clock.now() - config.idempotencyRetentionMs).catch((err) => logger.warn({ err }, 'idempotency purge failed'));
      }, 3600_000);
      purgeTimer.unref();
    },
    async stop() {
      if (purgeTimer) clearInterval(purgeTimer);
      await http.close();
      await crashEngine.stop();
      feed.stop();
      await db.close();
    },
  };
}
