/**
 * Defaults of game settings that configuration falls back to. They live here, below the games, because
 * `loadConfig` derives the configured values from them and configuration imports nothing from the
 * domain; the games and the engine receive the resulting values through `Config`.
 */

/**
 * Hash of Bitcoin block 505750, the salt fixed by bustabit's v2 seeding event
 * (bitcointalk.org topic 2807542) for games 1 to 10,000,000 of its v2 chain.
 */
export const DEFAULT_BUSTABIT_SALT = '0000000000000000004d6ec16dafe9d8370958664c1dc422f452892264c59526';

/**
 * How often the engine records that a running round is alive. A heartbeat on every tick would be a
 * transaction (an fsync on SQLite, a round trip on PostgreSQL) ten or twenty times a second for no
 * gain; every few ticks, and never more than four times a second, is enough, because what matters
 * is the staleness bound below, not the heartbeat's own resolution.
 */
export function engineHeartbeatMs(tickMs: number): number {
  return Math.max(tickMs, 250);
}

/**
 * How old a round's last heartbeat may be before cash-outs on it are refused: four missed
 * heartbeats (a slow commit or a GC pause must not refuse a live round), and at least a second. A
 * cash-out just inside the bound is paid at the curve's value, which a live engine would have paid.
 */
export function defaultEngineStaleMs(heartbeatMs: number): number {
  return Math.max(1_000, 4 * heartbeatMs);
}
