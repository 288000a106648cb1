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

/** A prepared call made while another was held (CallHold), and whether it has come back yet. */
export interface CallDuringHold extends PreparedCall {
  returned: boolean;
}

/**
 * Holds one prepared call before it reaches the store, for as long as a test needs: a call in flight.
 * `arm` names the calls to hold; the next of them waits until `release`. The calls made meanwhile are
 * recorded in `duringHold`. Install `around` as a prepared-call hook (the harness's aroundPrepared).
 */
export class CallHold {
  readonly duringHold: CallDuringHold[] = [];
  private armed: { names: ReadonlySet<string>; held: (call: PreparedCall) => void } | null = null;
  private holding: Promise<void> | null = null;
  private open: () => void = () => {};

  /** The next call of one of these names is held; the answer is that call, once it is. */
  arm(names: readonly string[]): Promise<PreparedCall> {
    return new Promise((held) => {
      this.armed = { names: new Set(names), held };
    });
  }

  /** Lets the held call (if any) go on to the store. */
  release(): void {
    this.open();
  }

  readonly around = async (
    name: string,
    params: readonly SqlParam[],
    proceed: () => Promise<unknown[]>,
  ): Promise<unknown[]> => {
    if (this.armed?.names.has(name)) {
      const { held } = this.armed;
      this.armed = null;
      this.holding = new Promise((r) => (this.open = r));
      held({ name, params });
      await this.holding;
      this.holding = null;
      return proceed();
    }
    if (!this.holding) return proceed();
    const call: CallDuringHold = { name, params, returned: false };
    this.duringHold.push(call);
    try {
      return await proceed();
    } finally {
      call.returned = true;
    }
  };
}
