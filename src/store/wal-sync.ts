import { statSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * Makes committed SQLite transactions durable without blocking the event loop.
 *
 * The connection runs WAL with synchronous=NORMAL: COMMIT writes the transaction's frames to the
 * -wal file (the OS page cache; a killed process loses nothing) but does not fsync. Before any
 * caller of a commit is answered, this class fdatasyncs the -wal file on libuv's thread pool. A
 * completed fdatasync covers every frame written before it started, so one sync acknowledges every
 * batch committed while the previous sync was running (the next batch's SQL runs meanwhile). The
 * guarantee is the one synchronous=FULL gives (acknowledged means on disk), minus the blocking.
 *
 * Checkpoints and WAL restarts sync by themselves under NORMAL (SQLite syncs the WAL before a
 * checkpoint, the database after it, and the WAL header when the log is reused).
 */
export class WalSync {
  private log: FileHandle | null = null;
  private ino = 0;
  private committed = 0;
  private synced = 0;
  private running = false;
  private failed: Error | null = null;
  private waiters: { seq: number; resolve: () => void; reject: (error: unknown) => void }[] = [];

  constructor(
    private readonly databaseFile: string,
    // A seam for tests that need to hold a sync open; the service always uses fdatasync.
    private readonly syncFile: (log: FileHandle) => Promise<void> = (log) => log.datasync(),
  ) {}

  /** Set once a sync has failed; from then on every write is refused (see settle). */
  get failure(): Error | null {
    return this.failed;
  }

  /** Resolves once everything committed up to now is on disk. */
  afterCommit(): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    return this.syncedUpTo(++this.committed);
  }

  /** Resolves once every commit made before this call is on disk (at once when nothing is pending). */
  whenDurable(): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    if (this.synced >= this.committed) return Promise.resolve();
    return this.syncedUpTo(this.committed);
  }

  /** Waits for pending syncs, then releases the log's file handle. */
  async close(): Promise<void> {
    await this.whenDurable().catch(() => undefined);
    const log = this.log;
    this.log = null;
    await log?.close();
  }

  private syncedUpTo(seq: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.waiters.push({ seq, resolve, reject });
      this.kick();
    });
  }

  private kick(): void {
    if (this.running || this.failed || this.synced >= this.committed) return;
    this.running = true;
    const target = this.committed;
    this.syncOnce().then(
      () => this.settle(target, null),
      (error: unknown) => this.settle(target, error),
    );
  }

  private settle(target: number, error: unknown): void {
    this.running = false;
    if (error !== null) {
      // Fail-stop, as PostgreSQL does on a failed fsync: the kernel may already have dropped the
      // pages it could not write, so a later successful sync would prove nothing about them. Every
      // waiting and future write is refused; a restart recovers from what is really on disk.
      const why = error instanceof Error ? error.message : String(error);
      this.failed = new Error(
        `the write-ahead log could not be synced to disk (${why}); the store refuses writes until restarted`,
      );
      for (const w of this.waiters) w.reject(this.failed);
      this.waiters = [];
      return;
    }
    this.synced = target;
    const still: typeof this.waiters = [];
    for (const w of this.waiters) {
      if (w.seq > target) still.push(w);
      else w.resolve();
    }
    this.waiters = still;
    this.kick();
  }

  private async syncOnce(): Promise<void> {
    const wal = `${this.databaseFile}-wal`;
    // A synchronous stat: metadata only, microseconds, and one thread-pool hop less per sync.
    const current = statOrNull(wal);
    if (current === null) {
      // No log on disk: the commits were checkpointed into the database file, which SQLite synced.
      return;
    }
    if (this.log === null || current.ino !== this.ino) {
      // First sync, or the log was replaced: a new file's directory entry must be durable too.
      await this.log?.close();
      this.log = await open(wal, 'r+');
      this.ino = (await this.log.stat()).ino;
      const dir = await open(dirname(wal), 'r');
      try {
        await dir.datasync();
      } finally {
        await dir.close();
      }
    }
    await this.syncFile(this.log);
  }
}

function statOrNull(path: string): { ino: number } | null {
  return statSync(path, { throwIfNoEntry: false }) ?? null;
}
