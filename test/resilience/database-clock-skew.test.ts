import { afterEach, describe, expect, it } from 'vitest';
import { systemClock, type Clock } from '../../src/clock/clock';
import { startTestApp, type TestApp } from '../support/harness';

/** The machine's clock, shifted: an instance whose NTP has drifted. */
const shifted = (offsetMs: number): Clock => ({
  now: () => Date.now() + offsetMs,
  schedule: (ms, fn) => systemClock.schedule(ms, fn),
});

/**
 * Instances on one PostgreSQL database judge a round by their own clocks against times another instance
 * wrote (running_at, the heartbeat, betting_closes_at). One seconds off refuses good cash-outs or pays at
 * a multiplier the leader has not reached, so it reports itself not ready instead of serving.
 */
describe('clock skew against the database server', () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('is ok for an instance on the machine clock', async () => {
    t = await startTestApp({ store: 'postgres', engines: false });
    const report = await t.app.services.readiness.report();
    expect(report.checks.clock).toBe('ok');
  });

  it('makes an instance 3 s ahead, or 3 s behind, not ready, and says why', async () => {
    for (const offset of [3_000, -3_000]) {
      t = await startTestApp({ store: 'postgres', engines: false, clock: shifted(offset) });
      const report = await t.app.services.readiness.report();
      expect(report.ready).toBe(false);
      const stated = /^this instance's clock is (-?\d+) ms off the database server's/.exec(report.checks.clock!);
      expect(stated, report.checks.clock).not.toBeNull();
      expect(Math.abs(Number(stated![1]) - offset)).toBeLessThan(250);
      expect(report.checks.clock).toContain('CLOCK_SKEW_MAX_MS, 500 ms');
      await t.close();
      t = undefined;
    }
  });

  it('follows CLOCK_SKEW_MAX_MS', async () => {
    t = await startTestApp({
      store: 'postgres',
      engines: false,
      clock: shifted(3_000),
      env: { CLOCK_SKEW_MAX_MS: '10000' },
    });
    expect((await t.app.services.readiness.report()).checks.clock).toBe('ok');
  });

  it('is not checked on the embedded store: one process, one clock', async () => {
    t = await startTestApp({ store: 'sqlite', engines: false, clock: shifted(3_000) });
    expect((await t.app.services.readiness.report()).checks).not.toHaveProperty('clock');
  });
});
