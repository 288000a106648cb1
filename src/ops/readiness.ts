import type { Database } from '../store/database';
import { pendingMigrations } from '../store/migrate';

/** One dependency that must answer before this instance takes traffic; throws with the reason. */
export type ReadinessCheck = () => Promise<void>;

export interface ReadinessReport {
  ready: boolean;
  checks: Record<string, 'ok' | string>;
}

/**
 * What a load balancer asks before sending traffic here (GET /readyz). Not ready until start-up has
 * finished (migrations, and the engines' recovery of rounds an earlier process left unfinished), and
 * not ready again from the moment a drain begins, so the balancer stops routing before the listener
 * closes. Other shared dependencies (a Redis, say) add themselves with `addCheck`.
 */
export class Readiness {
  private readonly checks = new Map<string, ReadinessCheck>();
  private started = false;
  private draining = false;

  constructor(
    db: Database,
    private readonly timeoutMs = 2_000,
  ) {
    this.addCheck('store', async () => {
      await db.get('SELECT 1 AS ok');
    });
    this.addCheck('migrations', async () => {
      const pending = await pendingMigrations(db);
      if (pending.length > 0) throw new Error(`not applied: ${pending.join(', ')}`);
    });
  }

  addCheck(name: string, check: ReadinessCheck): void {
    this.checks.set(name, check);
  }

  /** Start-up finished: recovery done, engines and workers started (or found running elsewhere). */
  markStarted(): void {
    this.started = true;
  }

  /** Shutdown began: report not ready from now on. */
  markDraining(): void {
    this.draining = true;
  }

  get isDraining(): boolean {
    return this.draining;
  }

  async report(): Promise<ReadinessReport> {
    const checks: Record<string, string> = {
      startup: this.started ? 'ok' : 'recovery not finished',
      drain: this.draining ? 'draining' : 'ok',
    };
    await Promise.all(
      [...this.checks].map(async ([name, check]) => {
        checks[name] = await this.withTimeout(check()).then(
          () => 'ok',
          (error: unknown) => (error instanceof Error ? error.message : String(error)) || 'failed',
        );
      }),
    );
    return { ready: Object.values(checks).every((v) => v === 'ok'), checks };
  }

  private withTimeout(p: Promise<void>): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${this.timeoutMs} ms`)), this.timeoutMs);
    });
    return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
  }
}
