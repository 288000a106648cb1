import { close, fdatasync, fstat, open, statSync } from 'node:fs';
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
  private fd: number | null = null;
  private ino = 0;
  private committed = 0;
  private synced = 0;
  private running = false;
  private failed: Error | null = null;
  private waiters: { seq: number; resolve: () => void; reject: (error: unknown) => void }[] = [];

  constructor(
    private readonly databaseFile: string,
    // A seam for tests that need to hold a sync open; the service always uses fs.fdatasync.
    private readonly syncFile: (fd: number, done: (err: NodeJS.ErrnoException | null) => void) => void = fdatasync,
  ) {}

  /** Set once a sync has failed; from then on every write is refused (see settle). */
  get failure(): Error | null {
    return this.failed;
  }

  /** Resolves once everything committed up to now is on disk. */
  afterCommit(): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    const seq = ++this.committed;
    return new Promise<void>((resolve, reject) => {
      this.waiters.push({ seq, resolve, reject });
      this.kick();
    });
  }

  /** Resolves once every commit made before this call is on disk (at once when nothing is pending). */
  whenDurable(): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    if (this.synced >= this.committed) return Promise.resolve();
    const seq = this.committed;
    return new Promise<void>((resolve, reject) => {
      this.waiters.push({ seq, resolve, reject });
      this.kick();
    });
  }

  /** Waits for pending syncs, then releases the file descriptor. */
  async close(): Promise<void> {
    await this.whenDurable().catch(() => undefined);
    if (this.fd !== null) {
      const fd = this.fd;
      this.fd = null;
      await new Promise<void>((resolve) => close(fd, () => resolve()));
    }
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
      this.failed = new Error(`the write-ahead log could not be synced to disk (${why}); the store refuses writes until restarted`);
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
    if (this.fd === null || current.ino !== this.ino) {
      // First sync, or the log was replaced: a new file's directory entry must be durable too.
      if (this.fd !== null) await closeFd(this.fd);
      this.fd = await openFd(wal);
      this.ino = (await fstatFd(this.fd)).ino;
      await syncDirectory(dirname(wal));
    }
    await new Promise<void>((resolve, reject) => this.syncFile(this.fd!, (err) => (err ? reject(err) : resolve())));
  }
}

function statOrNull(path: string): { ino: number } | null {
  return statSync(path, { throwIfNoEntry: false }) ?? null;
}

const openFd = (path: string, flags = 'r+'): Promise<number> =>
  new Promise((resolve, reject) => open(path, flags, (err, fd) => (err ? reject(err) : resolve(fd))));
const closeFd = (fd: number): Promise<void> => new Promise((resolve) => close(fd, () => resolve()));
const fstatFd = (fd: number): Promise<{ ino: number }> =>
  new Promise((resolve, reject) => fstat(fd, (err, st) => (err ? reject(err) : resolve(st))));

async function syncDirectory(dir: string): Promise<void> {
  const fd = await openFd(dir, 'r');
  try {
    await new Promise<void>((resolve, reject) => fdatasync(fd, (err) => (err ? reject(err) : resolve())));
  } finally {
    await closeFd(fd);
  }
}
