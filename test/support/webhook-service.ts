import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { systemClock } from '../../src/clock/clock';
import { OperatorService } from '../../src/operators/operators';
import { SecretBox } from '../../src/operators/secret-box';
import { WebhookService } from '../../src/webhooks/service';
import { freshDatabase, testConfig } from './harness';

/**
 * The webhook service and its operators on a fresh SQLite store, with these settings over the test
 * defaults; `resolve` stands in for DNS in the URL checks.
 */
export async function webhooksOnSqlite(
  env: Record<string, string> = {},
  resolve?: (host: string) => Promise<string[]>,
) {
  const fresh = await freshDatabase('sqlite');
  const db = fresh.db;
  const box = new SecretBox(randomBytes(32));
  const ops = new OperatorService(db, box, systemClock, 0);
  const logger = pino({ level: 'silent' });
  const config = testConfig(env);
  const w = new WebhookService({ db, box, clock: systemClock, logger, operators: ops, config, resolve });
  return { fresh, db, ops, w };
}
