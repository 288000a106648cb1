import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
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
 * Fans round state out to live subscribers (Server-Sent Events). On the instance that runs a game's
 * engine it relays the engine's events and publishes them on the change bus; the other instances
 * relay what the bus brings, so a player gets the same ticks (multiplier included) whichever
 * instance serves the stream. Round transitions are also polled from the store, which keeps the
 * feed right if the bus drops a message, and stands in for ticks while the bus is silent.
 */
export class LiveFeed {
  private readonly emitter = new EventEmitter();
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
    this.emitter.setMaxListeners(0);
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
    this.emitter.removeAllListeners();
  }

  subscribe(game: Game, listener: (m: FeedMessage) => void): () => void {
    this.emitter.on(game, listener);
    return () => this.emitter.off(game, listener);
  }

  subscriberCount(game: Game): number {
    return this.emitter.listenerCount(game);
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
    this.emitter.emit(game, message);
    if (this.bus) {
      const payload = JSON.stringify({ origin: this.origin, game, message });
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
    this.emitter.emit(game, message);
  }

  /** Followers learn transitions from the store; the leader's engine events already covered them. */
  private async poll(): Promise<void> {
    for (const engine of this.engines) {
      if (engine.isLeader || this.emitter.listenerCount(engine.game) === 0) continue;
      const round: Round | undefined = await roundRepository.latest(this.db, engine.game).catch(() => undefined);
      if (!round) continue;
      const key = `${round.id}:${round.status}`;
      if (this.lastSeen.get(engine.game) !== key) {
        this.lastSeen.set(engine.game, key);
        this.emitter.emit(engine.game, { event: 'round', data: { ...engine.presentRound(round) } });
      }
      const busQuiet = this.clock.now() - (this.lastRemoteTick.get(engine.game) ?? 0) > 2 * this.pollMs;
      if (round.status === 'running' && round.runningAt !== null && busQuiet) {
        const now = this.clock.now();
        this.emitter.emit(engine.game, {
          event: 'tick',
          data: { round_id: round.id, round_number: round.roundNumber, at: now, elapsed_ms: now - round.runningAt },
        });
      }
    }
  }
}
