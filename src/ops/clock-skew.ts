import type { Clock } from '../clock/clock';
import type { SqlExecutor } from '../store/database';
import { serverClockMs } from './server-clock-repository';

export interface ClockSkew {
  /** This instance's clock minus the database server's, at the middle of the round trip. */
  skewMs: number;
  /** Half the round trip: the skew is known to within this. */
  uncertaintyMs: number;
}

/** How far this instance's clock is from the database server's, which every instance shares. */
export async function measureClockSkew(db: SqlExecutor, clock: Pick<Clock, 'now'>): Promise<ClockSkew> {
  const sent = clock.now();
  const server = await serverClockMs(db);
  const answered = clock.now();
  return { skewMs: Math.round((sent + answered) / 2 - server), uncertaintyMs: (answered - sent) / 2 };
}

/**
 * A readiness check for instances sharing one PostgreSQL database. Every instance judges a round by its
 * own clock against times another instance wrote (the leader's running_at, its heartbeat, the betting
 * close): an instance whose clock is off by seconds refuses good cash-outs, pays others at a multiplier
 * the leader has not reached, or closes betting early. Such an instance is taken out of rotation until
 * its clock is fixed, rather than serving wrong answers.
 */
export function clockSkewCheck(db: SqlExecutor, clock: Pick<Clock, 'now'>, maxSkewMs: number): () => Promise<void> {
  return async () => {
    const { skewMs, uncertaintyMs } = await measureClockSkew(db, clock);
    if (Math.abs(skewMs) - uncertaintyMs > maxSkewMs) {
      throw new Error(
        `this instance's clock is ${skewMs} ms off the database server's (more than CLOCK_SKEW_MAX_MS, ` +
          `${maxSkewMs} ms): synchronise it (NTP)`,
      );
    }
  };
}
