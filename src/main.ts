import { constants } from 'node:os';
import { createApp, sharedStateWarning, storeInUse } from './app';
import { ConfigError, loadConfig } from './config/config';
import { DependencyUnavailableError } from './errors/unavailable';

/** How long after the grace period a shutdown that still has not finished is ended with exit 1. */
const FORCE_EXIT_MARGIN_MS = 3_000;

/**
 * A stop signal this soon after the first is the same stop delivered twice, not a second request:
 * `npm start` and tsx relay the signal to this process, and systemd (KillMode=control-group) or a
 * terminal's Ctrl-C also sends it to every process of the group, so one stop arrives two or three times
 * within milliseconds. A person asking again, after reading the first shutdown line, is far slower.
 */
const REPEATED_SIGNAL_WINDOW_MS = 1_000;

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
      // The same words the admin CLI prints, so a second terminal can check it acts on this store.
      store: storeInUse(config),
    },
    'service ready',
  );

  let stoppingSince: number | null = null;
  const shutdown = (signal: 'SIGTERM' | 'SIGINT'): void => {
    if (stoppingSince !== null) {
      if (performance.now() - stoppingSince < REPEATED_SIGNAL_WINDOW_MS) return;
      // A second signal means "now" (Ctrl-C twice, `kill` repeated by an operator whose drain is stuck):
      // the drain is abandoned. That is as safe as a crash, which the service is built to survive: every
      // acknowledged write was durable before its answer, an open transaction rolls back, engine and
      // outbox leases end with the connection or expire, and the next start voids and refunds a round
      // left running. The exit code says the process was ended by that signal (128 + its number).
      logger.warn({ signal }, 'second signal during shutdown: exiting at once without finishing the drain');
      process.exit(128 + constants.signals[signal]);
    }
    stoppingSince = performance.now();
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
  // A dependency that is down or misaddressed is an operator's matter: one line naming it and where it
  // is (the message never carries a password). Anything else is a defect and keeps its stack trace.
  let detail = error instanceof Error ? error.stack : String(error);
  if (error instanceof DependencyUnavailableError) detail = error.message;
  process.stderr.write(`failed to start: ${detail}\n`);
  process.exit(1);
});
