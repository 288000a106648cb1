import { EventEmitter } from 'node:events';
import pg from 'pg';
import type { Logger } from 'pino';
import type { SqlExecutor } from '../store/database';
import { DEFAULT_STORE_TIMEOUT_MS, type PostgresDatabase } from '../store/postgres';

/**
 * Small messages between the instances of one deployment: "operator X changed", "a live tick".
 * A message published inside a transaction is delivered only if, and when, that transaction
 * commits. Delivery is best-effort: a subscriber that was disconnected learns it through
 * `onResync` and must treat everything it cached as stale.
 */
export interface ChangeBus {
  publish(channel: BusChannel, payload: string, tx?: SqlExecutor): Promise<void>;
  subscribe(channel: BusChannel, handler: (payload: string) => void): () => void;
  /** Called after the bus (re)connected, when messages may have been missed. */
  onResync(handler: () => void): () => void;
  close(): Promise<void>;
}

export type BusChannel = 'operators' | 'live';

/** PostgreSQL NOTIFY carries at most 8000 bytes; the feed's ticks stay far below it. */
export const MAX_PAYLOAD_BYTES = 7_900;

/** The application_name of a deployment's LISTEN connection (its channel prefix names the deployment). */
export const listenerName = (prefix: string): string => `rbs-listen ${prefix}`;

/** How often the LISTEN connection is asked for an answer, so a stalled one is noticed and replaced. */
const LISTENER_PING_MS = 5_000;
/** How long a closing bus waits for the server to see its LISTEN connection off before dropping it. */
const CLOSE_GRACE_MS = 1_000;

/** One process, one store (SQLite): delivery is a local event. */
export class LocalChangeBus implements ChangeBus {
  private readonly emitter = new EventEmitter();

  constructor() {
    this.emitter.setMaxListeners(0);
  }

  async publish(channel: BusChannel, payload: string): Promise<void> {
    // After the caller's current work, as a committed NOTIFY would arrive.
    queueMicrotask(() => this.emitter.emit(channel, payload));
  }

  subscribe(channel: BusChannel, handler: (payload: string) => void): () => void {
    this.emitter.on(channel, handler);
    return () => this.emitter.off(channel, handler);
  }

  onResync(): () => void {
    return () => {};
  }

  async close(): Promise<void> {
    this.emitter.removeAllListeners();
  }
}

/**
 * LISTEN/NOTIFY on the database the instances already share. Channels are named after the schema
 * the tables live in (however it was chosen: adapter option or the URL's search_path), so
 * deployments (or test runs) sharing one PostgreSQL database never hear each other. Listening takes
 * one dedicated connection, opened on the first subscription and reopened after a failure.
 */
export class PostgresChangeBus implements ChangeBus {
  private readonly emitter = new EventEmitter();
  private listener: pg.Client | null = null;
  private connecting: Promise<void> | null = null;
  private closed = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private pingTimer: NodeJS.Timeout | null = null;
  private prefixLookup: Promise<string> | null = null;

  constructor(
    private readonly db: PostgresDatabase,
    private readonly logger?: Logger,
    private readonly retryMs = 1_000,
    private readonly pingMs = LISTENER_PING_MS,
  ) {
    this.emitter.setMaxListeners(0);
  }

  private prefix(): Promise<string> {
    this.prefixLookup ??= (async () => {
      const current = async () =>
        (await this.db.get<{ schema: string | null }>('SELECT current_schema() AS schema'))?.schema ?? 'public';
      const schema = this.db.options.schema ?? (await current());
      return `rbs_${schema.toLowerCase().replace(/[^a-z0-9_]/g, '_')}`.slice(0, 50);
    })().catch((error: unknown) => {
      this.prefixLookup = null;
      throw error;
    });
    return this.prefixLookup;
  }

  private async channelName(channel: BusChannel): Promise<string> {
    return `${await this.prefix()}_${channel}`;
  }

  async publish(channel: BusChannel, payload: string, tx?: SqlExecutor): Promise<void> {
    if (Buffer.byteLength(payload) > MAX_PAYLOAD_BYTES) {
      throw new RangeError(`bus payload over ${MAX_PAYLOAD_BYTES} bytes`);
    }
    await (tx ?? this.db).run('SELECT pg_notify(?, ?)', [await this.channelName(channel), payload]);
  }

  subscribe(channel: BusChannel, handler: (payload: string) => void): () => void {
    this.emitter.on(channel, handler);
    void this.ensureListening();
    return () => this.emitter.off(channel, handler);
  }

  onResync(handler: () => void): () => void {
    this.emitter.on('resync', handler);
    return () => this.emitter.off('resync', handler);
  }

  /** Resolves once this process listens (tests and start-up use it to know no change can be missed). */
  async ready(): Promise<void> {
    await this.ensureListening();
  }

  private ensureListening(): Promise<void> {
    if (this.closed || this.listener) return Promise.resolve();
    this.connecting ??= this.connect().finally(() => (this.connecting = null));
    return this.connecting;
  }

  private async connect(): Promise<void> {
    const { connectionString, schema } = this.db.options;
    const timeoutMs = this.db.options.timeoutMs ?? DEFAULT_STORE_TIMEOUT_MS;
    const client = new pg.Client({
      connectionString,
      options: schema ? `-c search_path=${schema}` : undefined,
      // A server that stops answering fails the ping below instead of leaving the bus deaf.
      connectionTimeoutMillis: timeoutMs,
      query_timeout: timeoutMs,
    });
    const lost = (err?: unknown) => {
      if (this.listener !== client) return;
      this.listener = null;
      this.stopPinging();
      client.end().catch(() => {});
      if (this.closed) return;
      this.logger?.warn({ err }, 'lost the PostgreSQL LISTEN connection; reconnecting');
      this.scheduleRetry();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    try {
      const prefix = await this.prefix();
      client.on('notification', (n) => {
        const channel = n.channel.slice(prefix.length + 1) as BusChannel;
        this.emitter.emit(channel, n.payload ?? '');
      });
      await client.connect();
      for (const channel of ['operators', 'live'] as BusChannel[]) {
        await client.query(`LISTEN "${await this.channelName(channel)}"`);
      }
      // Named for whoever reads pg_stat_activity (its last statement is soon the ping, not the LISTEN).
      await client.query(`SELECT set_config('application_name', $1, false)`, [listenerName(prefix)]);
    } catch (error) {
      client.end().catch(() => {});
      if (!this.closed) {
        this.logger?.warn({ err: error }, 'could not LISTEN on PostgreSQL; retrying');
        this.scheduleRetry();
      }
      return;
    }
    if (this.closed) {
      await client.end().catch(() => {});
      return;
    }
    this.listener = client;
    // A connection that stalls (a network path that drops packets, a host gone without a reset) raises
    // no error by itself: NOTIFYs just stop. An unanswered ping within the timeout counts as lost.
    let pinging = false;
    const ping = (): void => {
      // One ping at a time: a connection takes one statement at a time, and an unanswered ping ends it.
      if (pinging) return;
      pinging = true;
      client.query('SELECT 1').then(
        () => (pinging = false),
        (err: unknown) => lost(err),
      );
    };
    this.pingTimer = setInterval(ping, this.pingMs);
    this.pingTimer.unref();
    // Whatever was published while nobody listened is lost: caches start over.
    this.emitter.emit('resync');
  }

  private stopPinging(): void {
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.pingTimer = null;
  }

  private scheduleRetry(): void {
    if (this.retryTimer || this.closed) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      void this.ensureListening();
    }, this.retryMs);
    this.retryTimer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.connecting?.catch(() => {});
    this.stopPinging();
    const client = this.listener;
    this.listener = null;
    this.emitter.removeAllListeners();
    if (!client) return;
    // A graceful end waits for the server to close the socket, which a stalled one never does: past a
    // short grace the socket is dropped, so a shutdown is not held for as long as TCP takes to give up.
    const ended = client.end().then(
      () => true,
      () => true,
    );
    const grace = new Promise<false>((resolve) => setTimeout(() => resolve(false), CLOSE_GRACE_MS).unref());
    if (!(await Promise.race([ended, grace]))) {
      (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
    }
  }
}
