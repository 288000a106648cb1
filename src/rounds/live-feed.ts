import { EventEmitter } from 'node:events';
import type { Clock } from '../clock/clock';
import type { Database } from '../store/database';
import type { EngineEvent, RoundEngine } from './engine';
import type { Game, Round } from './round';
import { presentRound } from './round-presenter';
import { roundRepository } from './round-repository';

export interface FeedMessage {
  event: 'round' | 'tick';
  data: Record<string, unknown>;
}

/**
 * Fans round state out to live subscribers (Server-Sent Events). On the instance that runs a game's
 * engine it relays the engine's events; on the others it polls the store, so every instance can
 * serve the feed and nothing in it exists only in one process's memory.
 */
export class LiveFeed {
  private readonly emitter = new EventEmitter();
  private readonly lastSeen = new Map<Game, string>();
  private pollTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly engines: RoundEngine[],
    private readonly pollMs = 500,
  ) {
    this.emitter.setMaxListeners(0);
    for (const engine of engines) engine.on((e) => this.relay(engine.game, e));
  }

  start(): void {
    if (this.pollTimer) return;
    this.pollTimer = setInterval(() => void this.poll(), this.pollMs);
    this.pollTimer.unref();
  }

  stop(): void {
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.pollTimer = null;
    this.emitter.removeAllListeners();
  }

  subscribe(game: Game, listener: (m: FeedMessage) => void): () => void {
    this.emitter.on(game, listener);
    return () => this.emitter.off(game, listener);
  }

  subscriberCount(game: Game): number {
    return this.emitter.listenerCount(game);
  }

  async snapshot(game: Game): Promise<FeedMessage | null> {
    const round = await roundRepository.latest(this.db, game);
    return round ? { event: 'round', data: { ...presentRound(round) } } : null;
  }

  private relay(game: Game, e: EngineEvent): void {
    if (e.type === 'engine.error') return;
    if (e.type === 'round.tick') {
      this.emitter.emit(game, { event: 'tick', data: { round_id: e.round.id, round_number: e.round.roundNumber, at: e.at, ...e.data } });
      return;
    }
    this.lastSeen.set(game, `${e.round.id}:${e.round.status}`);
    this.emitter.emit(game, { event: 'round', data: { ...presentRound(e.round) } });
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
        this.emitter.emit(engine.game, { event: 'round', data: { ...presentRound(round) } });
      }
      if (round.status === 'running' && round.runningAt !== null) {
        const now = this.clock.now();
        this.emitter.emit(engine.game, {
          event: 'tick',
          data: { round_id: round.id, round_number: round.roundNumber, at: now, elapsed_ms: now - round.runningAt },
        });
      }
    }
  }
}
