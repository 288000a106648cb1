import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { WalSync } from './wal-sync';

/** An fdatasync the test completes by hand, so the order of events is the test's to choose. */
function heldSync() {
  const pending: ((err: NodeJS.ErrnoException | null) => void)[] = [];
  return {
    fn: () => new Promise<void>((resolve, reject) => pending.push((err) => (err ? reject(err) : resolve()))),
    started: () => pending.length,
    async finish(err: NodeJS.ErrnoException | null = null) {
      await until(() => pending.length > 0);
      pending.shift()!(err);
    },
  };
}

async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  if (!cond()) throw new Error('condition not reached');
}

function walFile(): string {
  const db = join(mkdtempSync(join(tmpdir(), 'walsync-')), 'service.db');
  writeFileSync(`${db}-wal`, 'frames');
  return db;
}

const settled = (p: Promise<unknown>) => {
  const state = { done: false, error: null as unknown };
  p.then(
    () => (state.done = true),
    (e: unknown) => ((state.done = true), (state.error = e)),
  );
  return state;
};

describe('WalSync', () => {
  it('answers a commit only after an fdatasync that began after it', async () => {
    const sync = heldSync();
    const wal = new WalSync(walFile(), sync.fn);
    const first = settled(wal.afterCommit());
    await until(() => sync.started() === 1);
    // Committed while the first sync is running: that sync may not cover it.
    const second = settled(wal.afterCommit());
    await new Promise((r) => setTimeout(r, 20));
    expect(first.done).toBe(false);
    await sync.finish();
    await until(() => first.done);
    expect(second.done).toBe(false);
    await sync.finish();
    await until(() => second.done);
    expect([first.error, second.error]).toEqual([null, null]);
  });

  it('acknowledges every commit made during one sync with the next single sync', async () => {
    const sync = heldSync();
    const wal = new WalSync(walFile(), sync.fn);
    const a = settled(wal.afterCommit());
    await until(() => sync.started() === 1);
    const later = [settled(wal.afterCommit()), settled(wal.afterCommit()), settled(wal.afterCommit())];
    await sync.finish();
    await until(() => a.done);
    await sync.finish();
    await until(() => later.every((s) => s.done));
    expect(sync.started()).toBe(0); // two syncs in all, none left waiting
  });

  it('stops for good after a failed sync: the waiting commits and every later one are refused', async () => {
    const sync = heldSync();
    const wal = new WalSync(walFile(), sync.fn);
    const lost = settled(wal.afterCommit());
    await until(() => sync.started() === 1);
    const alsoWaiting = settled(wal.afterCommit());
    await sync.finish(Object.assign(new Error('EIO: i/o error'), { code: 'EIO' }));
    await until(() => lost.done && alsoWaiting.done);
    expect((lost.error as Error).message).toMatch(/could not be synced to disk \(EIO: i\/o error\)/);
    expect(alsoWaiting.error).toBe(lost.error);
    await expect(wal.afterCommit()).rejects.toThrow(/refuses writes until restarted/);
    await expect(wal.whenDurable()).rejects.toThrow(/refuses writes until restarted/);
    expect(sync.started()).toBe(0); // nothing retried behind the caller's back
  });

  it('lets reads through at once when nothing is waiting for the disk, and holds them otherwise', async () => {
    const sync = heldSync();
    const wal = new WalSync(walFile(), sync.fn);
    const idle = settled(wal.whenDurable());
    await until(() => idle.done);
    void wal.afterCommit();
    const read = settled(wal.whenDurable());
    await new Promise((r) => setTimeout(r, 20));
    expect(read.done).toBe(false);
    await sync.finish();
    await until(() => read.done);
  });
});
