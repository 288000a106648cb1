import { createApp, sharedStateWarning } from './app';
import { ConfigError, loadConfig } from './config/config';

/** How long after the grace period a shutdown that still has not finished is ended with exit 1. */
const FORCE_EXIT_MARGIN_MS = 3_000;

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`configuration error: ${error.message}\n`);
      process.exit(78);
    }
    throw error;
  }
  const app = await createApp(config);
  const { logger } = app.services;
  if (config.env === 'development' && !config.tls)
    logger.warn('development mode: serving plain HTTP; production requires TLS');
  const unshared = sharedStateWarning(config);
  if (unshared) logger.warn(unshared);
  // Engines first: an instance that takes a game's lease voids and refunds the Crash round a previous
  // process left running before the port accepts a single request, so nothing is paid against a
  // round that nobody was driving. An instance that finds the lease held serves at once; its
  // cash-outs are guarded by the round heartbeat (src/games/crash/crash-bets.ts).
  await app.startBackground();
  await app.http.listen({ host: config.host, port: config.port });
  logger.info(
    {
      url: config.publicBaseUrl,
      docs: `${config.publicBaseUrl}/docs`,
      store: config.databaseUrl ? 'postgresql' : 'sqlite',
    },
    'service ready',
  );

  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    // Out of rotation first: /readyz fails while requests are still served for the drain delay,
    // then the listener closes and in-flight requests finish within the grace period.
    app.drain();
    const drainDelayMs = config.drainDelayMs;
    logger.info({ signal, drainDelayMs }, 'shutting down: draining, then finishing in-flight requests');
    const drained = new Promise<void>((resolve) => setTimeout(resolve, config.drainDelayMs));
    drained
      .then(() => {
        // In-flight requests and outbound calls get the grace period; what is still open then is cut
        // off and released by stop() itself. The timer is a backstop for a stop that hangs after that
        // (a store that no longer answers), within the margin the unit files leave.
        const force = setTimeout(() => {
          logger.error('graceful shutdown took too long; exiting');
          process.exit(1);
        }, config.shutdownGraceMs + FORCE_EXIT_MARGIN_MS);
        force.unref();
        return app.stop({ graceMs: config.shutdownGraceMs });
      })
      .then(
        () => process.exit(0),
        (err) => {
          logger.error({ err }, 'error during shutdown');
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((error) => {
  process.stderr.write(`failed to start: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
