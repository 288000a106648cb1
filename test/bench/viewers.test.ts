import { describe, expect, it } from 'vitest';
import { runViewersScenario } from '../../bench/scenarios/viewers';
import { PG_URL, REDIS_URL, STORES } from '../support/harness';

/**
 * The viewers scenario at its --quick size, as a correctness check (no speed is asserted): every
 * viewer, on the instance that runs the engine and on a follower that relays its ticks, is held
 * throughout and gets every tick of the engine, in order, each with its payload (Crash: the multiplier).
 */
describe.each(STORES)('viewers scenario, quick, on %s', (store) => {
  const VIEWERS = 200;

  it(store === 'postgres'
    ? 'a follower relays every engine tick to every viewer'
    : 'every viewer gets every tick', async () => {
    const pgUrl = store === 'postgres' ? PG_URL : null;
    const [run] = await runViewersScenario({
      viewers: VIEWERS,
      pgUrl,
      follower: store === 'postgres',
      redisUrl: REDIS_URL,
      measureS: 5,
      settleS: 1,
      idleS: 0.5,
      clientProcesses: 1,
    });
    expect(run).toMatchObject({
      viewers: VIEWERS,
      connected: VIEWERS,
      held: VIEWERS,
      openErrors: [],
      lostTotal: 0,
      ticksWithoutPayload: 0,
      outOfOrder: 0,
    });
    // Crash rounds ran in the window (a 1 s betting window, 0.5 s pause, 100 ms ticks).
    expect(run!.engineTicks).toBeGreaterThanOrEqual(5);
    // Each viewer received each engine tick of the window: 80% Crash viewers, 5% of them Stock Race.
    expect(run!.received - run!.extraTicks).toBeGreaterThanOrEqual(run!.engineTicks * VIEWERS * 0.95 * 0.99);
    if (store === 'sqlite') expect(run!.extraTicks).toBe(0);
  }, 180_000);
});
