import type { SqlExecutor } from '../store/database';
import { operatorRepository } from './operator-repository';

/** Past this many operators the cache starts over: it stays small however many sandboxes come and go. */
const MAX_CACHED = 10_000;

/**
 * Which operators play in test mode (sandbox): their bets stay out of live figures such as metrics,
 * and the events they cause carry livemode: false. An operator's mode is fixed when it is created,
 * so what this object once read stays true and is never invalidated; it is a cache of the store,
 * built once by the app (app.ts) and handed to everything that asks, so two apps in one process
 * (tests) never share it.
 */
export class OperatorModes {
  private readonly seen = new Map<string, boolean>();

  /** Whether this operator plays in test mode. */
  async isTest(tx: SqlExecutor, operatorId: string): Promise<boolean> {
    const known = this.seen.get(operatorId);
    if (known !== undefined) return known;
    return (await this.testModeOperators(tx, [operatorId])).has(operatorId);
  }

  /** The test-mode operators among these (null, a live round's owner, is never one). */
  async testModeOperators(tx: SqlExecutor, operatorIds: Iterable<string | null>): Promise<Set<string>> {
    const ids = [...new Set([...operatorIds].filter((id): id is string => id !== null))];
    const test = new Set(ids.filter((id) => this.seen.get(id) === true));
    const unknown = ids.filter((id) => !this.seen.has(id));
    if (unknown.length > 0) {
      const rows = await operatorRepository.testModes(tx, unknown);
      // Cleared before the new rows go in, and the answer built from the rows themselves: a clear
      // after filling (as the module-level cache did) answered "live" for the sandbox it had just read.
      if (this.seen.size + rows.length > MAX_CACHED) this.seen.clear();
      for (const r of rows) {
        this.seen.set(r.id, r.test);
        if (r.test) test.add(r.id);
      }
    }
    return test;
  }
}
