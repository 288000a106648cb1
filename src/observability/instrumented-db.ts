import type {
  Database,
  Lease,
  LeaseOptions,
  RunResult,
  SqlExecutor,
  SqlParam,
  SyncExecutor,
  TransactionOptions,
} from '../store/database';
import type { ServiceMetrics } from './metrics';

/** Counts a fact once the transaction that made it true is durable; never for a rollback. */
export type CommitHook = (metrics: ServiceMetrics) => void;

/** Wraps a unit of store work in a span when tracing is on (see tracing.ts); absent when it is off. */
export interface StoreSpans {
  transaction<T>(label: string | undefined, run: () => Promise<T>): Promise<T>;
}

const hooksOf = new WeakMap<SqlExecutor, CommitHook[]>();

/**
 * Records `hook` to run after `tx` commits. Domain code calls this where a fact is written (a bet
 * inserted, a bet settled), so the count is the store's truth, whichever route or worker caused it.
 * Outside an instrumented transaction (a test that drives the domain on a bare store) it is a no-op.
 */
export function afterCommit(tx: SqlExecutor, hook: CommitHook): void {
  hooksOf.get(tx)?.push(hook);
}

/**
 * Each transaction gets its own executor object: the SQLite adapter hands one shared executor to
 * every unit of a group commit, and hooks must stay with the unit that registered them.
 */
class UnitExecutor implements SqlExecutor {
  constructor(private readonly inner: SqlExecutor) {}
  get dialect() {
    return this.inner.dialect;
  }
  all<T = Record<string, unknown>>(sql: string, params?: readonly SqlParam[]): Promise<T[]> {
    return this.inner.all<T>(sql, params);
  }
  get<T = Record<string, unknown>>(sql: string, params?: readonly SqlParam[]): Promise<T | undefined> {
    return this.inner.get<T>(sql, params);
  }
  run(sql: string, params?: readonly SqlParam[]): Promise<RunResult> {
    return this.inner.run(sql, params);
  }
}

/** The store as the rest of the service sees it: the same Database, plus commit hooks and spans. */
export class InstrumentedDatabase implements Database {
  /** Present exactly when the store has them (SQLite: `unit`; PostgreSQL: `prepared`). */
  readonly unit?: <T>(fn: (tx: SyncExecutor) => T) => Promise<T>;
  readonly prepared?: <T = Record<string, unknown>>(
    name: string,
    sql: string,
    params: readonly SqlParam[],
  ) => Promise<T[]>;
  constructor(
    private readonly inner: Database,
    private readonly metrics: ServiceMetrics,
    private readonly spans: StoreSpans | null,
  ) {
    // Command units count their own facts once committed (the caller knows what it wrote).
    const spans_ = spans;
    if (inner.unit) {
      const unit = inner.unit.bind(inner);
      this.unit = spans_ ? (fn) => spans_.transaction('command', () => unit(fn)) : unit;
    }
    if (inner.prepared) {
      const prepared = inner.prepared.bind(inner);
      this.prepared = spans_
        ? (name, sql, params) => spans_.transaction(name, () => prepared(name, sql, params))
        : prepared;
    }
  }

  /** Counts a fact a command unit committed (the unit itself registers no hooks). */
  countCommitted(hook: CommitHook): void {
    hook(this.metrics);
  }

  get dialect() {
    return this.inner.dialect;
  }
  all<T = Record<string, unknown>>(sql: string, params?: readonly SqlParam[]): Promise<T[]> {
    return this.inner.all<T>(sql, params);
  }
  get<T = Record<string, unknown>>(sql: string, params?: readonly SqlParam[]): Promise<T | undefined> {
    return this.inner.get<T>(sql, params);
  }
  run(sql: string, params?: readonly SqlParam[]): Promise<RunResult> {
    return this.inner.run(sql, params);
  }

  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>, options?: TransactionOptions): Promise<T> {
    return this.spans
      ? this.spans.transaction(options?.label, () => this.counted(fn, options))
      : this.counted(fn, options);
  }

  private counted<T>(fn: (tx: SqlExecutor) => Promise<T>, options?: TransactionOptions): Promise<T> {
    let hooks: CommitHook[] = [];
    // A plain .then, not an async wrapper: this runs for every transaction on the hot path.
    return this.inner
      .transaction((tx) => {
        // A fresh list per attempt: if the adapter ever re-runs fn, only the committed run counts.
        hooks = [];
        const unit = new UnitExecutor(tx);
        hooksOf.set(unit, hooks);
        return fn(unit);
      }, options)
      .then((value) => {
        for (const hook of hooks) hook(this.metrics);
        return value;
      });
  }

  /** Player-page reads go to the store's read-only path untouched: they count nothing and open no unit. */
  get reads(): SqlExecutor {
    return this.inner.reads;
  }
  tryAcquireLease(name: string, options?: LeaseOptions): Promise<Lease | null> {
    return this.inner.tryAcquireLease(name, options);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}
