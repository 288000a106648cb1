import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { RequestDurationHistogram } from './request-durations';

/** Every metric name starts with this, so dashboards and alerts can find the service's own series. */
export const METRIC_PREFIX = 'rbs_';

/** A label value for unknown routes: the raw URL would let any client create series at will. */
export const UNMATCHED_ROUTE = 'unmatched';

/**
 * The games as metric labels. Spelled out here rather than imported from the engine: observability sits
 * below the domain (the engine and the stores report to it), and a game missing here fails to compile
 * where the engine passes its Game.
 */
export type GameLabel = 'crash' | 'stock_race';
const GAME_LABELS: readonly GameLabel[] = ['crash', 'stock_race'];

export type OutboxQueue = 'webhooks' | 'wallet';
const OUTBOX_QUEUES: readonly OutboxQueue[] = ['webhooks', 'wallet'];

export interface MetricSources {
  /**
   * An outbox's undelivered rows and when the oldest was written, read from the store at scrape time
   * (so the gauges show the store as it is, whichever instance wrote to it) by the outbox's repository.
   */
  outboxBacklog: (queue: OutboxQueue) => Promise<{ pending: number; oldestAt: number | null }>;
  now: () => number;
  /** Whether this process holds each game's engine lease. */
  leaders: () => { game: GameLabel; leader: boolean }[];
}

type Backlog = Awaited<ReturnType<MetricSources['outboxBacklog']>>;

/** Well under Prometheus's default scrape timeout (10 s). */
const BACKLOG_READ_TIMEOUT_MS = 2_000;

/**
 * Every queue's backlog, or null when the store does not answer. prom-client fails the whole scrape
 * when one collect throws, and a database outage is exactly when the request and process series
 * matter: the outbox gauges are then left out of the scrape (absent, not a stale or made-up 0).
 */
async function readBacklogs(sources: MetricSources): Promise<[OutboxQueue, Backlog][] | null> {
  let timer: NodeJS.Timeout | undefined;
  // A store that hangs (a pool with every connection taken) must not hang the scrape past
  // Prometheus's timeout either: the read is abandoned after BACKLOG_READ_TIMEOUT_MS.
  const late = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), BACKLOG_READ_TIMEOUT_MS);
    timer.unref();
  });
  const read = async (): Promise<[OutboxQueue, Backlog][]> => {
    const backlogs: [OutboxQueue, Backlog][] = [];
    for (const queue of OUTBOX_QUEUES) backlogs.push([queue, await sources.outboxBacklog(queue)]);
    return backlogs;
  };
  try {
    return await Promise.race([read(), late]);
  } catch {
    return null;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The service's Prometheus metrics, in a registry of their own (never the process-wide default, so
 * several apps in one process, as in tests, do not share counters). Labels are bounded by
 * construction: games, outcomes, route patterns, currencies and status codes; never operator or
 * bet ids.
 */
export class ServiceMetrics {
  readonly registry = new Registry();
  readonly httpDuration: RequestDurationHistogram;
  readonly betsPlaced: Counter<'game'>;
  readonly betsSettled: Counter<'game' | 'outcome'>;
  readonly payouts: Counter<'game' | 'currency'>;
  readonly webhookDeliveries: Counter<'outcome'>;
  readonly walletSettlements: Counter<'outcome'>;
  readonly rateLimited: Counter<'surface'>;

  constructor(sources: MetricSources) {
    const registers = [this.registry];
    // prom-client collects a scrape's metrics concurrently: the two outbox gauges share the read in
    // flight, so a scrape runs each queue's aggregate once. Nothing is kept once it settles.
    let backlogRead: ReturnType<typeof readBacklogs> | null = null;
    const backlogs = () => {
      backlogRead ??= readBacklogs(sources).finally(() => {
        backlogRead = null;
      });
      return backlogRead;
    };
    collectDefaultMetrics({ register: this.registry, prefix: METRIC_PREFIX });
    this.httpDuration = new RequestDurationHistogram(
      `${METRIC_PREFIX}http_request_duration_seconds`,
      'Time from request received to response sent, by route pattern.',
      [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    );
    this.betsPlaced = new Counter({
      name: `${METRIC_PREFIX}bets_placed_total`,
      help: 'Bets accepted and committed.',
      labelNames: ['game'],
      registers,
    });
    this.betsSettled = new Counter({
      name: `${METRIC_PREFIX}bets_settled_total`,
      help: 'Bets settled and committed, by final status (cashed_out, won, lost, void).',
      labelNames: ['game', 'outcome'],
      registers,
    });
    this.payouts = new Counter({
      name: `${METRIC_PREFIX}payouts_minor_total`,
      help: 'Sum of committed payouts in minor units (currency "none": Surface A plain units).',
      labelNames: ['game', 'currency'],
      registers,
    });
    this.webhookDeliveries = new Counter({
      name: `${METRIC_PREFIX}webhook_deliveries_total`,
      help: 'Webhook delivery attempts recorded: delivered, retry (failed, will retry), dead (gave up), cancelled.',
      labelNames: ['outcome'],
      registers,
    });
    this.walletSettlements = new Counter({
      name: `${METRIC_PREFIX}wallet_settlements_total`,
      help: 'Wallet settlement attempts recorded: delivered (wallet answered 2xx) or failed (will retry).',
      labelNames: ['outcome'],
      registers,
    });
    this.rateLimited = new Counter({
      name: `${METRIC_PREFIX}rate_limited_total`,
      help: 'Requests refused with 429 by the rate limiter, by API surface.',
      labelNames: ['surface'],
      registers,
    });
    // Read from the store at scrape: one small aggregate per queue.
    new Gauge({
      name: `${METRIC_PREFIX}outbox_pending`,
      help: 'Outbox rows not yet delivered (webhook deliveries, wallet settlements), read from the store at scrape.',
      labelNames: ['queue'],
      registers,
      async collect() {
        const read = await backlogs();
        if (read === null) return this.reset();
        for (const [queue, backlog] of read) this.set({ queue }, backlog.pending);
      },
    });
    new Gauge({
      name: `${METRIC_PREFIX}outbox_oldest_age_seconds`,
      help: 'Age of the oldest undelivered outbox row (0 when none), read from the store at scrape.',
      labelNames: ['queue'],
      registers,
      async collect() {
        const read = await backlogs();
        if (read === null) return this.reset();
        for (const [queue, { oldestAt }] of read) {
          this.set({ queue }, oldestAt === null ? 0 : Math.max(0, (sources.now() - oldestAt) / 1000));
        }
      },
    });
    new Gauge({
      name: `${METRIC_PREFIX}round_engine_leader`,
      help: '1 when this process holds the game engine lease and runs its rounds.',
      labelNames: ['game'],
      registers,
      collect() {
        for (const { game, leader } of sources.leaders()) this.set({ game }, leader ? 1 : 0);
      },
    });
    for (const game of GAME_LABELS) {
      this.betsPlaced.inc({ game }, 0);
      this.placedByGame[game] = this.betsPlaced.labels({ game });
    }
  }

  /** Label children made once: an increment then skips hashing the label set (place-bet's hot path). */
  private readonly placedByGame = {} as Record<GameLabel, { inc(): void }>;

  betPlaced(game: GameLabel): void {
    this.placedByGame[game].inc();
  }

  /** The surface a URL belongs to, for the rate-limit counter (a fixed set of values). */
  static surfaceOf(url: string): string {
    if (url.startsWith('/api/public/')) return 'a';
    if (url.startsWith('/v1/')) return 'b';
    return 'other';
  }
}
