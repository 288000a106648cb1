import type { Logger } from 'pino';
import type { Clock } from './clock/clock';
import type { ComplianceHooks } from './compliance/hooks';
import type { Config } from './config/config';
import type { CrashGame } from './crash/crash-game';
import type { TokenBucketLimiter } from './http/rate-limit';
import type { IdempotencyService } from './idempotency/idempotency';
import type { OperatorService } from './operators/operators';
import type { RoundEngine } from './rounds/engine';
import type { LiveFeed } from './rounds/live-feed';
import type { Database } from './store/database';

/** Everything the HTTP layer may call, built once by the composition root (src/app.ts). */
export interface AppServices {
  config: Config;
  clock: Clock;
  logger: Logger;
  db: Database;
  operators: OperatorService;
  idempotency: IdempotencyService;
  compliance: ComplianceHooks;
  limiter: TokenBucketLimiter;
  crashGame: CrashGame;
  engines: { crash: RoundEngine };
  feed: LiveFeed;
}
