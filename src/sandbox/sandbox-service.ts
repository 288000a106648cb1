import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { Clock, TimerHandle } from '../clock/clock';
import { noCompliance } from '../bets/compliance-hooks';
import type { Config } from '../config/config';
import { DomainError } from '../errors/codes';
import type { Operator } from '../operators/operator';
import type { OperatorModes } from '../operators/operator-mode';
import type { OperatorService } from '../operators/operators';
import { RoundEngine } from '../games/engine/engine';
import { type FeedMessage, type LiveFeed, singleBatch } from '../games/engine/live-feed';
import type { Game } from '../games/engine/round';
import { presentRound } from '../games/round-presenter';
import { roundRepository } from '../games/engine/round-repository';
import type { Database, WriteTransaction } from '../store/database';
import type { CrashGameOptions } from '../games/crash/crash-game';
import type { StockRaceGameOptions } from '../games/stock-race/stock-race-game';
import { SandboxCrashGame, SandboxStockRaceGame, sandboxSeeds } from './sandbox-games';
import { simulatedWallet, type SandboxBalance } from './simulated-wallet';
import type { SandboxTiming, SandboxWalletSwitch, ScriptedOutcome, SandboxScript } from './sandbox-settings';
import { sandboxRepository } from './sandbox-repository';

/**
 * A game driver's options but its logger and compliance hooks, which each engine sets for itself, and
 * the app's OperatorModes, which the sandbox hands on with its own.
 */
export interface GameSettings {
  crash: Omit<CrashGameOptions, 'logger' | 'compliance' | 'modes'>;
  stockRace: Omit<StockRaceGameOptions, 'logger' | 'compliance' | 'modes'>;
}

export interface SandboxServiceOptions {
  db: Database;
  clock: Clock;
  logger: Logger;
  config: Config;
  operators: OperatorService;
  /** The app's cache of which operators play in test mode, for the sandbox's drivers and engines. */
  modes: OperatorModes;
  /** The games' settings from configuration, as the live engines get them. */
  games: GameSettings;
  /** A sandbox engine nobody has used for this long is stopped; the next request starts it again. */
  idleMs: number;
  /** Whether this process may run sandbox engines at all (API-only replicas leave it to others). */
  runEngines: boolean;
}

interface Running {
  operatorId: string;
  game: Game;
  engine: RoundEngine;
  crash: SandboxCrashGame | null;
  lastUsed: number;
}

const FIRST_ROUND_WAIT_MS = 2_000;
/** How often a sandbox feed served away from its engine reads the store (the live feed's poll). */
const FOLLOW_POLL_MS = 500;

/**
 * Test mode. Each sandbox (test-mode) operator gets its own rounds per game, run by its own
 * RoundEngine: started when the operator first needs it, stopped when idle. Rounds carry the
 * operator's id, so every live read (rounds, feeds, figures, fairness) simply never sees them, and
 * its bets, scripts, timing and simulated wallet stay inside the sandbox. Sandbox games raise no
 * compliance flags: test bets are not player behaviour.
 */
export class SandboxService {
  private readonly running = new Map<string, Running>();
  private readonly starting = new Map<string, Promise<Running>>();
  private readonly timings = new Map<string, SandboxTiming>();
  private readonly feedEmitter = new EventEmitter();
  /** Feeds followed from the store on this instance, and the last transition each one carried. */
  private readonly followers = new Map<string, { timer: NodeJS.Timeout; subscribers: number }>();
  private readonly lastSeen = new Map<string, string>();
  private sweepTimer: TimerHandle | null = null;
  private stopped = false;

  constructor(private readonly o: SandboxServiceOptions) {
    this.feedEmitter.setMaxListeners(0);
  }

  /**
   * The live feed of one sandbox, shaped like the live one (round transitions and ticks). The engine's
   * events reach only the instance that leads it; every other instance follows the store (see follow).
   */
  feedOf(operatorId: string): Pick<LiveFeed, 'snapshot' | 'subscribe'> {
    return {
      snapshot: async (game) => {
        const round = await roundRepository.latest(this.o.db, game, operatorId);
        return round ? { event: 'round', data: { ...presentRound(round) } } : null;
      },
      subscribe: (game, listener) => {
        const key = `${operatorId}:${game}`;
        this.feedEmitter.on(key, listener);
        this.follow(operatorId, game);
        return () => {
          this.feedEmitter.off(key, listener);
          this.unfollow(key);
        };
      },
    };
  }

  /**
   * While a sandbox feed has subscribers here, polls the store for its transitions unless this
   * instance leads the sandbox's engine (whose events already reach them), as the live feed's
   * followers do: with several instances, a player's feed is often served where the engine is not.
   */
  private follow(operatorId: string, game: Game): void {
    const key = `${operatorId}:${game}`;
    const existing = this.followers.get(key);
    if (existing) {
      existing.subscribers++;
      return;
    }
    const timer = setInterval(() => void this.pollFollower(operatorId, game), FOLLOW_POLL_MS);
    timer.unref();
    this.followers.set(key, { timer, subscribers: 1 });
  }

  private unfollow(key: string): void {
    const follower = this.followers.get(key);
    if (!follower || --follower.subscribers > 0) return;
    clearInterval(follower.timer);
    this.followers.delete(key);
  }

  /** A sandbox feed has a handful of viewers: encoded once and handed to them at once. */
  private emitFeed(key: string, message: FeedMessage): void {
    this.feedEmitter.emit(key, singleBatch(message));
  }

  private async pollFollower(operatorId: string, game: Game): Promise<void> {
    const key = `${operatorId}:${game}`;
    if (this.running.get(key)?.engine.isLeader) return;
    const round = await roundRepository.latest(this.o.db, game, operatorId).catch(() => undefined);
    if (!round) return;
    const seen = `${round.id}:${round.status}`;
    if (this.lastSeen.get(key) !== seen) {
      this.lastSeen.set(key, seen);
      this.emitFeed(key, { event: 'round', data: { ...presentRound(round) } });
    }
    if (round.status === 'running' && round.runningAt !== null) {
      const now = this.o.clock.now();
      const data = { round_id: round.id, round_number: round.roundNumber, at: now, elapsed_ms: now - round.runningAt };
      this.emitFeed(key, { event: 'tick', data });
    }
  }

  start(): void {
    this.stopped = false;
    this.scheduleSweep();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.sweepTimer?.cancel();
    this.sweepTimer = null;
    for (const follower of this.followers.values()) clearInterval(follower.timer);
    this.followers.clear();
    await Promise.allSettled([...this.starting.values()]);
    await Promise.all([...this.running.values()].map((r) => r.engine.stop()));
    this.running.clear();
  }

  /** The engines running now (operations, tests). */
  runningEngines(): { operatorId: string; game: Game; engine: RoundEngine }[] {
    return [...this.running.values()].map((r) => ({ operatorId: r.operatorId, game: r.game, engine: r.engine }));
  }

  /**
   * Makes sure the operator's sandbox runs this game, waiting briefly for its first round to open,
   * so the request that woke it can already bet.
   */
  async touch(operator: Operator, game: Game): Promise<void> {
    assertTestMode(operator);
    if (!this.o.runEngines || this.stopped) return;
    const key = `${operator.id}:${game}`;
    const existing = this.running.get(key);
    if (existing) {
      existing.lastUsed = this.o.clock.now();
      return;
    }
    let pending = this.starting.get(key);
    if (!pending) {
      pending = this.launch(operator.id, game).finally(() => this.starting.delete(key));
      this.starting.set(key, pending);
    }
    await pending;
  }

  /** A manual cash-out served here: the sandbox's Crash driver stops tracking the bet. */
  noteCrashSettled(operatorId: string, betId: string): void {
    this.running.get(`${operatorId}:crash`)?.crash?.noteSettled(betId);
  }

  async timing(operatorId: string): Promise<SandboxTiming> {
    return (await sandboxRepository.settings(this.o.db, operatorId, this.o.config)).timing;
  }

  /** Runs a write's one transaction as the store's own, unless the caller hands another (an idempotent retry's). */
  private readonly ownTransaction: WriteTransaction = (work) => this.o.db.transaction(work);

  async setTiming(
    operator: Operator,
    patch: DeepPartialTiming,
    inTx: WriteTransaction = this.ownTransaction,
  ): Promise<SandboxTiming> {
    assertTestMode(operator);
    const now = this.o.clock.now();
    const timing = await inTx(async (tx) => {
      const current = await sandboxRepository.settings(tx, operator.id, this.o.config);
      const next: SandboxTiming = {
        crash: { ...current.timing.crash, ...(patch.crash ?? {}) },
        stock_race: { ...current.timing.stock_race, ...(patch.stock_race ?? {}) },
      };
      await sandboxRepository.saveSettings(tx, operator.id, { ...current, timing: next }, now);
      return next;
    });
    this.timings.set(operator.id, timing);
    return timing;
  }

  async walletSwitch(operatorId: string): Promise<SandboxWalletSwitch> {
    return (await sandboxRepository.settings(this.o.db, operatorId, this.o.config)).wallet;
  }

  async setWalletSwitch(
    operator: Operator,
    value: SandboxWalletSwitch,
    inTx: WriteTransaction = this.ownTransaction,
  ): Promise<SandboxWalletSwitch> {
    assertTestMode(operator);
    const now = this.o.clock.now();
    await inTx(async (tx) => {
      const current = await sandboxRepository.settings(tx, operator.id, this.o.config);
      await sandboxRepository.saveSettings(tx, operator.id, { ...current, wallet: value }, now);
    });
    return value;
  }

  /** Queues outcomes after those already queued; answers with every outcome still queued. */
  async script(
    operator: Operator,
    game: Game,
    outcomes: ScriptedOutcome[],
    inTx: WriteTransaction = this.ownTransaction,
  ): Promise<SandboxScript[]> {
    assertTestMode(operator);
    const now = this.o.clock.now();
    return inTx(async (tx) => {
      await sandboxRepository.enqueueScripts(tx, operator.id, game, outcomes, now);
      return sandboxRepository.pendingScripts(tx, operator.id, game);
    });
  }

  async pendingScripts(operator: Operator, game: Game): Promise<SandboxScript[]> {
    assertTestMode(operator);
    return sandboxRepository.pendingScripts(this.o.db, operator.id, game);
  }

  async clearScripts(operator: Operator, game: Game): Promise<number> {
    assertTestMode(operator);
    return sandboxRepository.clearScripts(this.o.db, operator.id, game);
  }

  /** Sets a player's balance in the simulated wallet (minor units). */
  async setBalance(
    operator: Operator,
    balance: SandboxBalance,
    inTx: WriteTransaction = this.ownTransaction,
  ): Promise<SandboxBalance> {
    assertTestMode(operator);
    return simulatedWallet.setBalance(inTx, operator.id, balance, this.o.clock.now());
  }

  /** A player's balances in the simulated wallet, one per currency. */
  async balances(operator: Operator, playerRef: string): Promise<SandboxBalance[]> {
    assertTestMode(operator);
    return simulatedWallet.balances(this.o.db, operator.id, playerRef);
  }

  /**
   * The world a player session plays in: its operator's sandbox when that operator is in test
   * mode, else null (live). Read on the read-only path: player pages never wait behind a writer.
   */
  async scopeOfSession(session: { operatorId: string }): Promise<string | null> {
    const operator = await this.o.operators.get(session.operatorId, this.o.db.reads);
    return operator.mode === 'test' ? operator.id : null;
  }

  private async launch(operatorId: string, game: Game): Promise<Running> {
    this.timings.set(operatorId, await this.timing(operatorId));
    const timing = (): SandboxTiming => this.timings.get(operatorId) ?? this.fallbackTiming();
    const logger = this.o.logger.child({ sandbox: operatorId, game });
    const { games, modes } = this.o;
    const own = { logger, compliance: noCompliance, modes };
    let crash: SandboxCrashGame | null = null;
    const driver =
      game === 'crash'
        ? (crash = new SandboxCrashGame({ ...games.crash, ...own }, operatorId, timing))
        : new SandboxStockRaceGame({ ...games.stockRace, ...own }, operatorId, timing);
    const engine = new RoundEngine({
      db: this.o.db,
      clock: this.o.clock,
      chain: sandboxSeeds,
      driver,
      logger,
      modes,
      operatorId,
    });
    const opened = new Promise<void>((resolve) => {
      const off = engine.on((e) => {
        if (e.type === 'round.opened') {
          off();
          resolve();
        }
      });
      const t = setTimeout(() => (off(), resolve()), FIRST_ROUND_WAIT_MS);
      t.unref();
    });
    const feedKey = `${operatorId}:${game}`;
    engine.on((e) => {
      if (e.type === 'engine.error') return;
      // Timing may have been changed through another instance: re-read it for the next round.
      if (e.type === 'round.closed' || e.type === 'round.voided') {
        void this.timing(operatorId)
          .then((fresh) => this.timings.set(operatorId, fresh))
          .catch((err) => logger.warn({ err }, 'could not re-read the sandbox timing'));
      }
      const message: FeedMessage =
        e.type === 'round.tick'
          ? { event: 'tick', data: { round_id: e.round.id, round_number: e.round.roundNumber, at: e.at, ...e.data } }
          : { event: 'round', data: { ...presentRound(e.round) } };
      if (e.type !== 'round.tick') this.lastSeen.set(feedKey, `${e.round.id}:${e.round.status}`);
      this.emitFeed(feedKey, message);
    });
    const entry: Running = { operatorId, game, engine, crash, lastUsed: this.o.clock.now() };
    this.running.set(`${operatorId}:${game}`, entry);
    await engine.start();
    logger.info('sandbox engine started');
    await opened;
    return entry;
  }

  private fallbackTiming(): SandboxTiming {
    const c = this.o.config;
    return {
      crash: { betting_window_ms: c.crash.bettingWindowMs, pause_ms: c.crash.pauseMs },
      stock_race: {
        betting_window_ms: c.stockRace.bettingWindowMs,
        race_ms: c.stockRace.raceMs,
        pause_ms: c.stockRace.pauseMs,
      },
    };
  }

  private scheduleSweep(): void {
    if (this.stopped) return;
    this.sweepTimer = this.o.clock.schedule(Math.min(this.o.idleMs, 60_000), () => {
      void this.sweep().finally(() => this.scheduleSweep());
    });
  }

  /** Stops engines idle for longer than idleMs; their unfinished round waits in the store for the next start. */
  private async sweep(): Promise<void> {
    const now = this.o.clock.now();
    for (const [key, r] of this.running) {
      // A round in play finishes first: stopping a running Crash round would void it on the next start.
      if (now - r.lastUsed < this.o.idleMs || r.engine.currentRound?.status === 'running') continue;
      this.running.delete(key);
      await r.engine
        .stop()
        .catch((err) => this.o.logger.warn({ err, sandbox: r.operatorId }, 'could not stop an idle sandbox engine'));
      this.o.logger.info({ sandbox: r.operatorId, game: r.game }, 'sandbox engine stopped (idle)');
    }
  }
}

export interface DeepPartialTiming {
  crash?: Partial<SandboxTiming['crash']>;
  stock_race?: Partial<SandboxTiming['stock_race']>;
}

/** Sandbox calls are for test keys only; the routes refuse live keys before they get here. */
function assertTestMode(operator: Operator): void {
  if (operator.mode !== 'test') throw new DomainError('SANDBOX_ONLY', 'sandbox calls need a test-mode key (pk_test_…)');
}
