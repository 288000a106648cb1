import type { FakeClock } from '../../src/clock/clock';
import type { TestApp } from './harness';

/**
 * Runs `request` with the fake clock set to `later(now)` once, the moment the request reads its
 * operator's compliance settings: as if deciding the request took that long. No timer runs, so the
 * engines do not move meanwhile (the store still shows the round as it was when the request came in).
 * Returns the request's result and whether the jump happened.
 */
export async function decidedLate<T>(
  t: TestApp,
  clock: FakeClock,
  later: (now: number) => number,
  request: () => Promise<T>,
): Promise<{ result: T; jumped: boolean }> {
  const compliance = t.app.services.compliance as unknown as { settingsFor: (...args: never[]) => Promise<unknown> };
  const settingsFor = compliance.settingsFor;
  let jumped = false;
  compliance.settingsFor = async function (this: unknown, ...args: never[]) {
    const settings = await settingsFor.apply(this, args);
    if (!jumped) {
      jumped = true;
      const fake = clock as unknown as { current: number };
      fake.current = later(fake.current);
    }
    return settings;
  };
  try {
    return { result: await request(), jumped };
  } finally {
    compliance.settingsFor = settingsFor;
  }
}
