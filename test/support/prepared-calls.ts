import { vi } from 'vitest';
import type { Database, SqlParam } from '../../src/store/database';

/** One prepared call a PostgreSQL store was asked to make: the statement's name and its parameters. */
export interface PreparedCall {
  name: string;
  params: readonly SqlParam[];
}

/**
 * Records every prepared call a PostgreSQL store makes, through a spy (`vi.restoreAllMocks` undoes
 * it). With `failFirst`, the first call of that name is recorded and fails with `error` without
 * reaching the store, as a call does when nothing of it committed (a deadlock, a dropped connection).
 */
export class PreparedCalls {
  readonly calls: PreparedCall[] = [];
  /** Whether the call named in `failFirst` has been failed. */
  failed = false;

  constructor(db: Database, failFirst?: { name: string; error: Error }) {
    const prepared = db.prepared!.bind(db);
    vi.spyOn(db, 'prepared').mockImplementation((name, sql, params) => {
      this.calls.push({ name, params });
      if (failFirst && name === failFirst.name && !this.failed) {
        this.failed = true;
        return Promise.reject(failFirst.error);
      }
      return prepared(name, sql, params);
    });
  }
}
