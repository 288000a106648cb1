import { randomUUID } from 'node:crypto';
import type { Clock } from '../../clock/clock';
import type { ChangeBus } from '../../cluster/change-bus';
import type { Database } from '../../store/database';
import type { EngineEvent, RoundEngine } from './engine';
import type { Game, Round } from './round';
import { roundRepository } from './round-repository';

export interface FeedMessage {
  event: 'round' | 'tick';
  data: Record<string, unknown>;
}

/**
 * What a subscriber is handed at once: every message that waited for it, in order, and the same
 * messages as Server-Sent Events frames encoded once for every subscriber (`frame`: all of them;
 * `roundFrame`: only the round transitions, for a viewer too far behind to take ticks).
 */
export interface FeedBatch {
  messages: FeedMessage[];
  frame: Buffer;
  roundFrame: Buffer | null;
}

export type FeedListener = (batch: FeedBatch) => void;

/** The SSE frame of a message whose data is already JSON. */
function frameOf(event: FeedMessage['event'], dataJson: string): Buffer {
  return Buffer.from(`event: ${event}\ndata: ${dataJson}\n\n`);
}

export function encodeFrame(message: FeedMessage): Buffer {
  return frameOf(message.event, JSON.stringify(message.data));
}

function batchOf(queued: { message: FeedMessage; frame: Buffer }[]): FeedBatch {
  const rounds = queued.filter((q) => q.message.event === 'round').map((q) => q.frame);
  return {
    messages: queued.map((q) => q.message),
    frame: queued.length === 1 ? queued[0]!.frame : Buffer.concat(queued.map((q) => q.frame)),
    roundFrame: rounds.length === 0 ? null : Buffer.concat(rounds),
  };
}

/** One message as a batch of its own (a feed with a handful of viewers hands each message at once). */
export function singleBatch(message: FeedMessage): FeedBatch {
  return batchOf([{ message, frame: encodeFrame(message) }]);
}

/**
 * Subscribers handed a batch per turn of the event loop at most this many at a time: a tick reaches
 * 10,000 viewers in slices, with the engine's timers and the sockets' I/O running between them.
 */
const FAN_OUT_SLICE = 256;

interface Subscriber {
  listener: FeedListener;
  active: boolean;
}

/**
 * One game's subscribers and the messages on their way to them. The engine only queues a message (its
 * timer never waits on a viewer); a fan-out pass runs later and hands each subscriber, in slices that
 * yield to the event loop, every message queued when the pass began, in one batch. A pass costs one
 * write per viewer however many ticks it carries: when the viewers outnumber what one tick's time can
 * serve, ticks are grouped, never queued without bound, and none is lost.
 */
class GameFanOut {
  private readonly subscribers = new Set<Subscriber>();
  private queue: { message: FeedMessage; frame: Buffer }[] = [];
  private delivering = false;

  get size(): number {
    return this.subscribers.size;
  }

  add(listener: FeedListener): () => void {
    const subscriber = { listener, active: true };
    this.subscribers.add(subscriber);
    return () => {
      subscriber.active = false;
      this.subscribers.delete(subscriber);
    };
  }

  push(message: FeedMessage, frame: Buffer): void {
    if (this.subscribers.size === 0) return;
    this.queue.push({ message, frame });
    if (this.delivering) return;
    this.delivering = true;
    setImmediate(() => this.nextPass());
  }

  clear(): void {
    for (const s of this.subscribers) s.active = false;
    this.subscribers.clear();
    this.queue = [];
  }

  private nextPass(): void {
    if (this.queue.length === 0) {
      this.delivering = false;
      return;
    }
    const batch = batchOf(this.queue);
    this.queue = [];
    // Who subscribed when the pass began; one who leaves meanwhile is skipped.
    this.deliverSlice(Array.from(this.subscribers), 0, batch);
  }

  private deliverSlice(to: Subscriber[], from: number, batch: FeedBatch): void {
    const end = Math.min(to.length, from + FAN_OUT_SLICE);
    for (let i = from; i < end; i++) {
      const s = to[i]!;
      if (!s.active) continue;
      try {
        s.listener(batch);
      } catch {
        // One subscriber's failure (a socket torn down under it) is its own: the others still get the batch.
      }
    }
    if (end < to.length) setImmediate(() => this.deliverSlice(to, end, batch));
    else setImmediate(() => this.nextPass());
  }
}

/**
 * Fans round state out to live subscribers (Server-Sent Events). On the instance that runs a game's
 * engine it relays the engine's events and publishes them on the change bus; the other instances
 * relay what the bus brings, so a player gets the same ticks (multiplier included) whichever
 * instance serves the stream. Round transitions are also polled from the store, which keeps the
 * feed right if the bus drops a message, and stands in for ticks while the bus is silent.
 */
export class LiveFeed {
  private readonly fanOuts = new Map<Game, GameFanOut>();
  private readonly lastSeen = new Map<Game, string>();
  private readonly lastRemoteTick = new Map<Game, number>();
  private pollTimer: NodeJS.Timeout | null = null;
  private unsubscribe: (() => void) | null = null;
  /** Tells this process's own messages apart when the bus hands them back. */
  private readonly origin = randomUUID();

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly engines: RoundEngine[],
    private readonly pollMs = 500,
    private readonly bus?: ChangeBus,
  ) {
    for (const engine of engines) engine.on((e) => this.relay(engine, e));
  }

  start(): void {
    if (this.pollTimer) return;
    this.unsubscribe = this.bus?.subscribe('live', (payload) => this.receive(payload)) ?? null;
    this.pollTimer = setInterval(() => void this.poll(), this.pollMs);
    this.pollTimer.unref();
  }

  stop(): void {
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.pollTimer = null;
    this.unsubscribe?.();
    this.unsubscribe = null;
    for (const fanOut of this.fanOuts.values()) fanOut.clear();
  }

  subscribe(game: Game, listener: FeedListener): () => void {
    return this.fanOutOf(game).add(listener);
  }

  subscriberCount(game: Game): number {
    return this.fanOuts.get(game)?.size ?? 0;
  }

  private fanOutOf(game: Game): GameFanOut {
    let fanOut = this.fanOuts.get(game);
    if (!fanOut) this.fanOuts.set(game, (fanOut = new GameFanOut()));
    return fanOut;
  }

  /** Encodes the message once, for every subscriber of this instance and the bus alike. */
  private emit(game: Game, message: FeedMessage, dataJson = JSON.stringify(message.data)): string {
    this.fanOutOf(game).push(message, frameOf(message.event, dataJson));
    return dataJson;
  }

  /** The latest round of a game this feed carries (one it has an engine for). */
  async snapshot(game: Game): Promise<FeedMessage | null> {
    const engine = this.engines.find((e) => e.game === game);
    if (!engine) return null;
    const round = await roundRepository.latest(this.db, game);
    return round ? { event: 'round', data: { ...engine.presentRound(round) } } : null;
  }

  private relay(engine: RoundEngine, e: EngineEvent): void {
    if (e.type === 'engine.error') return;
    const game = engine.game;
    let message: FeedMessage;
    if (e.type === 'round.tick') {
      const data = { round_id: e.round.id, round_number: e.round.roundNumber, at: e.at, ...e.data };
      message = { event: 'tick', data };
    } else {
      this.lastSeen.set(game, `${e.round.id}:${e.round.status}`);
      message = { event: 'round', data: { ...engine.presentRound(e.round) } };
    }
    const dataJson = this.emit(game, message);
    if (this.bus) {
      // The data as already encoded for this instance's viewers, wrapped rather than encoded again.
      const head = `{"origin":"${this.origin}","game":"${game}","message":{"event":"${message.event}","data":`;
      const payload = `${head}${dataJson}}}`;
      // A lost tick is replaced by the next one; the poll repairs a lost transition.
      this.bus.publish('live', payload).catch(() => {});
    }
  }

  private receive(payload: string): void {
    let parsed: { origin?: string; game?: Game; message?: FeedMessage };
    try {
      parsed = JSON.parse(payload) as typeof parsed;
    } catch {
      return;
    }
    const { origin, game, message } = parsed;
    if (origin === this.origin || !game || !message) return;
    const engine = this.engines.find((e) => e.game === game);
    // This process leads the game now: its own engine is the source, not a message still in flight.
    if (!engine || engine.isLeader) return;
    if (message.event === 'round') {
      const key = `${String(message.data.round_id)}:${String(message.data.status)}`;
      if (this.lastSeen.get(game) === key) return;
      this.lastSeen.set(game, key);
    } else {
      this.lastRemoteTick.set(game, this.clock.now());
    }
    this.emit(game, message);
  }

  /** Followers learn transitions from the store; the leader's engine events already covered them. */
  private async poll(): Promise<void> {
    for (const engine of this.engines) {
      if (engine.isLeader || this.subscriberCount(engine.game) === 0) continue;
      const round: Round | undefined = await roundRepository.latest(this.db, engine.game).catch(() => undefined);
      if (!round) continue;
      const key = `${round.id}:${round.status}`;
      if (this.lastSeen.get(engine.game) !== key) {
        this.lastSeen.set(engine.game, key);
        this.emit(engine.game, { event: 'round', data: { ...engine.presentRound(round) } });
      }
      const busQuiet = this.clock.now() - (this.lastRemoteTick.get(engine.game) ?? 0) > 2 * this.pollMs;
      if (round.status === 'running' && round.runningAt !== null && busQuiet) {
        // What the leader's tick would carry at this instant (Crash: the multiplier), so a viewer of
        // this instance never sees a tick without it.
        const now = this.clock.now();
        const data = { round_id: round.id, round_number: round.roundNumber, at: now, ...engine.liveTick(round, now) };
        this.emit(engine.game, { event: 'tick', data });
      }
    }
  }
}
