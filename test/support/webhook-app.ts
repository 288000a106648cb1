import { afterAll, beforeAll } from 'vitest';
import { startTestApp, type TestApp } from './harness';
import { TestReceiver } from './webhook-receiver';

/**
 * A service and a receiver for its webhooks, started before the suite's tests and closed after them.
 * Read `t` and `base` (the receiver's URL) inside tests; `receiver.behaviour` sets its answers.
 */
export function appWithReceiver(options: Parameters<typeof startTestApp>[0]) {
  const suite = { t: undefined as unknown as TestApp, receiver: new TestReceiver(), base: '' };
  beforeAll(async () => {
    suite.base = await suite.receiver.start();
    suite.t = await startTestApp(options);
  });
  afterAll(async () => {
    await suite.t?.close();
    await suite.receiver.close();
  });
  return suite;
}
