import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { addressForMessages, DependencyUnavailableError } from '../errors/unavailable';

/**
 * How long one command may take before it fails. A Redis that holds the connection open but does
 * not answer (stuck in a slow command, swapping, a stalled network path) never closes the socket,
 * so without a deadline every request that needs it would wait forever instead of getting its 503.
 * Far above a healthy round trip (well under a millisecond on a local network).
 */
export const REDIS_COMMAND_TIMEOUT_MS = 1_000;

/**
 * The shared fast state of a multi-instance deployment (rate-limit buckets, seen signatures, login
 * throttling). Commands fail fast rather than queue while Redis is unreachable or stalled: a request
 * waits at most `commandTimeoutMs` and is then refused with 503, instead of piling up behind a dead
 * connection.
 */
export async function openRedis(
  url: string,
  logger: Logger,
  keyPrefix = '',
  commandTimeoutMs = REDIS_COMMAND_TIMEOUT_MS,
): Promise<Redis> {
  const redis = new Redis(url, {
    keyPrefix,
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    connectTimeout: 5_000,
    // Also bounds a command waiting in the offline queue while a reconnect is attempted.
    commandTimeout: commandTimeoutMs,
    enableOfflineQueue: true,
  });
  let reported = false;
  let starting = true;
  // ioredis rejects a failed first connect with a bare "Connection is closed."; the reason it closed
  // (refused, timed out, authentication) arrives as an error event just before, so it is kept here.
  let lastError: Error | null = null;
  redis.on('error', (err: Error) => {
    lastError = err;
    // At start the failure is thrown (and reported once by the process); a log line would say it twice.
    if (starting) return;
    // ioredis retries on its own; one line per outage is enough.
    if (!reported) logger.error({ err: err.message }, 'redis connection error');
    reported = true;
  });
  redis.on('ready', () => {
    if (reported) logger.info('redis connection restored');
    reported = false;
  });
  try {
    await redis.connect();
  } catch (error) {
    // No reconnect loop left behind for a connection nobody will use.
    redis.disconnect();
    const cause = (lastError ?? (error as Error)).message;
    // "Command timed out" is the ready check unanswered: a server that accepts and then says nothing.
    const reason = /timed out|ETIMEDOUT/i.test(cause) ? `no answer in time (${cause})` : cause;
    throw new DependencyUnavailableError(
      `cannot connect to Redis at ${addressForMessages(url, '6379')} (REDIS_URL): ${reason}`,
    );
  } finally {
    starting = false;
  }
  return redis;
}

export async function closeRedis(redis: Redis): Promise<void> {
  await redis.quit().catch(() => redis.disconnect());
}
