import { Redis } from 'ioredis';
import type { Logger } from 'pino';

/**
 * The shared fast state of a multi-instance deployment (rate-limit buckets, seen signatures, login
 * throttling). Commands fail fast rather than queue while Redis is unreachable: a request waits at
 * most a short moment and is then refused with 503, instead of piling up behind a dead connection.
 */
export async function openRedis(url: string, logger: Logger, keyPrefix = ''): Promise<Redis> {
  const redis = new Redis(url, {
    keyPrefix,
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    connectTimeout: 5_000,
    enableOfflineQueue: true,
  });
  let reported = false;
  redis.on('error', (err: Error) => {
    // ioredis retries on its own; one line per outage is enough.
    if (!reported) logger.error({ err: err.message }, 'redis connection error');
    reported = true;
  });
  redis.on('ready', () => {
    if (reported) logger.info('redis connection restored');
    reported = false;
  });
  await redis.connect();
  return redis;
}

export async function closeRedis(redis: Redis): Promise<void> {
  await redis.quit().catch(() => redis.disconnect());
}
