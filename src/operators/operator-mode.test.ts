import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/clock';
import type { SqlExecutor, SqlParam } from '../store/database';
import { migrate } from '../store/migrate';
import { SqliteDatabase } from '../store/sqlite';
import { OperatorModes } from './operator-mode';
import { OperatorService } from './operators';
import { SecretBox } from './secret-box';

/** The store, with a count of the statements that reached it. */
function counting(db: SqlExecutor): { exec: SqlExecutor; reads: () => number } {
  let reads = 0;
  const exec: SqlExecutor = {
    dialect: db.dialect,
    all: (sql, params) => (reads++, db.all(sql, params)),
    get: (sql, params) => (reads++, db.get(sql, params)),
    run: (sql, params) => (reads++, db.run(sql, params)),
  };
  return { exec, reads: () => reads };
}

describe('OperatorModes: which operators play in test mode, cached per instance', () => {
  let db: SqliteDatabase;
  let live: string;
  let sandbox: string;

  beforeEach(async () => {
    db = new SqliteDatabase({ filename: ':memory:' });
    await migrate(db);
    const operators = new OperatorService(db, new SecretBox(randomBytes(32)), new FakeClock(1_800_000_000_000), 0);
    live = (await operators.create({ name: 'live' })).id;
    sandbox = (await operators.create({ name: 'sandbox', mode: 'test' })).id;
  });
  afterEach(async () => db.close());

  it('answers from the store once, then from its cache without a store read', async () => {
    const { exec, reads } = counting(db);
    const modes = new OperatorModes();
    expect(await modes.testModeOperators(exec, [live, sandbox, null])).toEqual(new Set([sandbox]));
    expect(reads()).toBe(1);
    expect(await modes.isTest(exec, sandbox)).toBe(true);
    expect(await modes.isTest(exec, live)).toBe(false);
    expect(await modes.testModeOperators(exec, [sandbox, live, null])).toEqual(new Set([sandbox]));
    expect(reads()).toBe(1);
    // Only what it has not seen yet is read, and an unknown operator is simply not in test mode.
    expect(await modes.testModeOperators(exec, [sandbox, 'op_unknown'])).toEqual(new Set([sandbox]));
    expect(reads()).toBe(2);
  });

  it('two instances over the same store share nothing: each reads for itself and keeps its own answers', async () => {
    const { exec, reads } = counting(db);
    const first = new OperatorModes();
    const second = new OperatorModes();
    expect(await first.isTest(exec, sandbox)).toBe(true);
    expect(reads()).toBe(1);
    // What `first` learnt does not spare `second` its read.
    expect(await second.isTest(exec, live)).toBe(false);
    expect(await second.isTest(exec, sandbox)).toBe(true);
    expect(reads()).toBe(3);
    // A mode never changes in the service; changed behind both caches here, it shows whose state is whose:
    // each keeps what it read, and a new instance (a restarted app) rebuilds from the store.
    await db.run("UPDATE operators SET mode = 'live' WHERE id = ?", [sandbox]);
    expect(await first.isTest(exec, sandbox)).toBe(true);
    expect(await second.isTest(exec, sandbox)).toBe(true);
    expect(await new OperatorModes().isTest(exec, sandbox)).toBe(false);
  });

  it('stays bounded, and the read that overflows it still answers with what it read', async () => {
    // A store that knows every id: those starting with "sbx" play in test mode.
    let reads = 0;
    const all = async <T>(_sql: string, params?: readonly SqlParam[]): Promise<T[]> => {
      reads++;
      return (params ?? []).map((id) => ({ id, mode: String(id).startsWith('sbx') ? 'test' : 'live' })) as T[];
    };
    const store = { dialect: 'sqlite', all } as unknown as SqlExecutor;
    const modes = new OperatorModes();
    const many = Array.from({ length: 9_999 }, (_, i) => `op_${i}`);
    expect(await modes.testModeOperators(store, many)).toEqual(new Set());
    expect(reads).toBe(1);
    // This read takes the cache past its bound: it starts over, and the sandbox it just read is still one.
    expect(await modes.testModeOperators(store, ['sbx_1', 'op_a', 'op_b'])).toEqual(new Set(['sbx_1']));
    expect(await modes.isTest(store, 'sbx_1')).toBe(true);
    expect(reads).toBe(2);
    // What it held before starting over is read again.
    expect(await modes.isTest(store, 'op_0')).toBe(false);
    expect(reads).toBe(3);
  });
});
