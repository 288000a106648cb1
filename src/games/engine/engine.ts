import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { Clock, TimerHandle } from '../../clock/clock';
import {
  type Database,
  type Lease,
  LeaseLostError,
  type SqlExecutor,
  type WriteTransaction,
} from '../../store/database';
import type { DomainEvent, EventModes } from '../../webhooks/domain-event';
import { recordEvents } from '../../webhooks/events';
import type { RoundEventData } from '../../webhooks/payloads';
import type { FairChainService } from './fair-chain';
import {
  type ClosedRound,
  closedWith,
  type Game,
  type OpenRound,
  type Round,
  type RoundOutcome,
  type RunningRound,
  voidedWith,
} from './round';
import { roundRepository } from './round-repository';
import { type OutcomeJson, presentRoundAs, presentRoundWith, type RoundJson } from './round-presenter';

/** The fields only one game's rounds carry (Crash: salt, house_edge_bp; Stock Race: symbols, race_ms). */
export type GameRoundFields = Pick<RoundEventData, 'salt' | 'house_edge_bp' | 'symbols' | 'race_ms'>;

/** What a game plugs into the shared engine. */
export interface GameDriver {
  readonly game: Game;
  readonly bettingWindowMs: number;
  readonly pauseMs: number;
  readonly tickMs: number;
  /** What happens to a round found running by a process that just took the lease. */
  readonly recoverRunning: 'void' | 'finish';
  /**
   * Games whose players act while a round runs (a Crash cash-out) need proof that its engine is
   * alive: the engine then records a heartbeat on the running round at least this often.
   */
  readonly heartbeatMs?: number;
  /** Game settings frozen into each round when it opens. */
  roundSettings(): Record<string, unknown>;
  /** A closed round's outcome as the game shows it, in every presentation of the round. */
  presentOutcome(round: ClosedRound): OutcomeJson;
  /** The game's own fields in every presentation of a round (read endpoints and round webhooks). */
  roundFields?(round: Round): GameRoundFields;
  /** Length of the running phase, which the seed fixes in advance (the crash instant, the race length). */
  runningDurationMs(round: OpenRound): number;
  /** Prepares in-memory state for a running round (also after a takeover with recoverRunning 'finish'). */
  onRunning(round: RunningRound): Promise<void>;
  /**
   * The live-feed payload of a running round at `now` (Crash: the multiplier), with no side effect: what
   * onTick returns after its work, and what an instance that does not drive the round shows meanwhile.
   */
  liveTick(round: RunningRound, now: number): Record<string, unknown>;
  /**
   * Work due at `now` while running (auto cash-outs); returns the live-feed payload. Its writes go
   * through `write`, the engine's own transaction, so they too are refused once the lease is lost.
   */
  onTick(round: RunningRound, now: number, write: WriteTransaction): Promise<Record<string, unknown>>;
  /**
   * Inside the closing transaction: settle every open bet, return the outcome (the driver's game's)
   * and the events to record.
   */
  close(tx: SqlExecutor, round: RunningRound, now: number): Promise<{ outcome: RoundOutcome; events: DomainEvent[] }>;
  /** Inside the voiding transaction: return every stake not already paid. */
  voidBets(tx: SqlExecutor, round: OpenRound | RunningRound, now: number): Promise<DomainEvent[]>;
  /** Inside the transaction that closes betting: a sandbox driver fixes a scripted outcome here. */
  prepareRun?(tx: SqlExecutor, round: OpenRound): Promise<OpenRound>;
}

/** The part of FairChainService the engine uses; a sandbox supplies its own seeds through it. */
export interface SeedSource {
  ensureChain(game: Game): Promise<unknown>;
  takeSeed: FairChainService['takeSeed'];
}

export type EngineEvent =
  | { type: 'round.opened'; round: Round }
  | { type: 'round.running'; round: Round }
  | { type: 'round.tick'; round: Round; at: number; data: Record<string, unknown> }
  | { type: 'round.closed'; round: Round }
  | { type: 'round.voided'; round: Round }
  | { type: 'engine.error'; error: unknown };

export interface RoundEngineOptions {
  db: Database;
  clock: Clock;
  /** Where round seeds come from: the game's hash chain, or a sandbox's own seeds. */
  chain: SeedSource;
  driver: GameDriver;
  logger: Logger;
  /** Which operators play in test mode (the app's OperatorModes): their rounds' events carry livemode: false. */
  modes: EventModes;
  /** Set for a sandbox engine: the test-mode operator whose own rounds it runs (and alone hears of). */
  operatorId?: string;
  /**
   * How often a standby process tries to take the lease, and the leader checks it still holds it.
   * A leader silent for three times this loses the lease to the store, so takeover is bounded.
   */
  leaseCheckMs?: number;
  /** Back-off after a failed step (the store was unreachable, say). */
  retryMs?: number;
}

/**
 * Runs one game's rounds forever: open → running → closed → pause → open… Only the process holding
 * the game's lease runs it; state lives in the store, so a process that takes the lease over picks
 * up from there. Steps run one at a time (a serial chain) so a slow tick never overlaps a close.
 */
export class RoundEngine {
  private readonly emitter = new EventEmitter();
  private lease: Lease | null = null;
  private timers = new Set<TimerHandle>();
  private chainTail: Promise<void> = Promise.resolve();
  private stopped = true;
  private current: Round | null = null;
  /** When this process last recorded a heartbeat on the current running round. */
  private lastHeartbeat = { roundId: '', at: 0 };
  /**
   * When the lease was last known held, on the process's monotonic real-time clock (a lease is lost to
   * silence measured on real time, not game time). A frozen process sees this go stale on thaw.
   */
  private leaseConfirmedAt = 0;
  private readonly leaseCheckMs: number;
  private readonly retryMs: number;

  constructor(private readonly o: RoundEngineOptions) {
    this.emitter.setMaxListeners(0);
    this.leaseCheckMs = o.leaseCheckMs ?? 1_000;
    this.retryMs = o.retryMs ?? 1_000;
  }

  get game(): Game {
    return this.o.driver.game;
  }

  /** Live round events go to every operator (null); a sandbox's only to its operator. */
  private get eventOwner(): string | null {
    return this.o.operatorId ?? null;
  }

  /** The round as the read endpoints show it: the round event payloads are exactly this. */
  present(round: Round): RoundEventData {
    const driver = this.o.driver;
    return presentRoundWith(round, (r) => driver.presentOutcome(r), driver.roundFields?.(round) ?? {});
  }

  /** The round without the game's own fields: what the live feed carries. */
  presentRound(round: Round): RoundJson {
    return presentRoundAs(round, (r) => this.o.driver.presentOutcome(r));
  }

  /** A running round's live-feed payload at `now`, as this game's ticks carry it. */
  liveTick(round: RunningRound, now: number): Record<string, unknown> {
    return this.o.driver.liveTick(round, now);
  }

  get isLeader(): boolean {
    return this.lease !== null;
  }

  /** The round this process is driving, if it is the leader. */
  get currentRound(): Round | null {
    return this.current;
  }

  on(listener: (event: EngineEvent) => void): () => void {
    this.emitter.on('event', listener);
    return () => this.emitter.off('event', listener);
  }

  /**
   * Resolves once this process has either taken the lease and recovered the game's unfinished
   * rounds (an interrupted Crash round is voided and refunded by then), or found another process
   * holding it. The service listens only after that (src/main.ts).
   */
  async start(): Promise<void> {
    this.stopped = false;
    await this.tryLead();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) t.cancel();
    this.timers.clear();
    await this.chainTail;
    if (this.lease) await this.lease.release().catch(() => {});
    this.lease = null;
  }

  /** Resolves once the work queued so far has run (start-up recovery, right after taking the lease). */
  async idle(): Promise<void> {
    await this.chainTail;
  }

  /** Voids a round on request (operations), returning every stake not already paid. */
  voidRound(roundId: string, reason: string): Promise<void> {
    return this.serial(async () => {
      const round = await roundRepository.byId(this.o.db, roundId);
      if (!round) return;
      await this.doVoid(round, reason);
    });
  }

  private async tryLead(): Promise<void> {
    if (this.stopped) return;
    try {
      this.lease = await this.o.db.tryAcquireLease(this.leaseName, { silentForMs: 3 * this.leaseCheckMs });
    } catch (error) {
      this.o.logger.warn({ err: error, game: this.game }, 'could not reach the store to take the engine lease');
    }
    if (!this.lease) {
      this.later(this.leaseCheckMs, () => void this.tryLead());
      return;
    }
    this.leaseConfirmedAt = performance.now();
    this.o.logger.info({ game: this.game }, 'took the engine lease; this process runs the rounds');
    this.later(this.leaseCheckMs, () => void this.watchLease());
    await this.serial(() => this.recover());
  }

  private async watchLease(): Promise<void> {
    if (this.stopped || !this.lease) return;
    const checkedAt = performance.now();
    if (await this.lease.isHeld()) {
      this.leaseConfirmedAt = Math.max(this.leaseConfirmedAt, checkedAt);
      this.later(this.leaseCheckMs, () => void this.watchLease());
      return;
    }
    this.standDown();
  }

  /** Another process may already be running the rounds: stop touching them at once. */
  private standDown(): void {
    const lease = this.lease;
    if (!lease) return;
    this.o.logger.error({ game: this.game }, 'lost the engine lease; standing by');
    for (const t of this.timers) t.cancel();
    this.timers.clear();
    this.lease = null;
    // Its session is gone (or no longer answers): close it, with its keep-alive, rather than leave both.
    void lease.release().catch(() => {});
    this.current = null;
    this.later(this.leaseCheckMs, () => void this.tryLead());
  }

  private async recover(): Promise<void> {
    const unfinished = await roundRepository.unfinished(this.o.db, this.game, this.o.operatorId ?? null);
    const now = this.o.clock.now();
    for (const round of unfinished.slice(0, -1)) await this.doVoid(round, 'superseded by a newer round');
    const round = unfinished.at(-1);
    if (!round) return this.openRound();
    this.current = round;
    if (round.status === 'open') {
      this.o.logger.info({ game: this.game, round: round.roundNumber }, 'resuming the betting window of an open round');
      this.emit({ type: 'round.opened', round });
      this.at(round.bettingClosesAt, () => this.startRunning(round.id));
      return;
    }
    await this.takeOverRunning(round, 'the service restarted or failed over while the round was running');
  }

  /**
   * A round another process left running: voided (Crash: no engine ticked its auto cash-outs meanwhile)
   * or finished (Stock Race), as the driver says.
   */
  private async takeOverRunning(round: RunningRound, reason: string): Promise<void> {
    this.current = round;
    if (this.o.driver.recoverRunning === 'void') {
      this.o.logger.warn({ game: this.game, round: round.roundNumber, reason }, 'voiding a round another process ran');
      await this.doVoid(round, reason);
      this.later(this.o.driver.pauseMs, () => this.serial(() => this.openRound()));
      return;
    }
    this.o.logger.info({ game: this.game, round: round.roundNumber, reason }, 'finishing a round another process ran');
    await this.o.driver.onRunning(round);
    this.emit({ type: 'round.running', round });
    this.scheduleTicks(round);
    this.at(round.endsAt, () => this.closeRound(round.id));
  }

  private async openRound(): Promise<void> {
    if (this.stopped || !this.lease) return;
    // A process that was frozen past its lease (the store ended its session) stands down here before
    // it touches the chain; the fence in the transaction below is what keeps it from opening a round
    // beside the new leader's should it freeze again after this check.
    if (!(await this.lease.isHeld())) return this.standDown();
    // No playable chain (its salt is not fixed yet, or breaks the rules): the chain service has said
    // why in the log; look again later rather than play a round whose outcome could have been chosen.
    if (!(await this.o.chain.ensureChain(this.game))) {
      this.later(this.retryMs, () => void this.serial(() => this.openRound()));
      return;
    }
    const now = this.o.clock.now();
    const round = await this.write(async (tx) => {
      const seed = await this.o.chain.takeSeed(tx, this.game);
      const created = await roundRepository.insert(tx, {
        game: this.game,
        seedHash: seed.seedHash,
        seed: seed.seed,
        chainId: seed.chainId,
        chainIdx: seed.idx,
        openedAt: now,
        bettingClosesAt: now + this.o.driver.bettingWindowMs,
        // The salt is the chain's, fixed after its commitment; the round carries it for verification.
        settings: { ...this.o.driver.roundSettings(), ...(seed.salt === null ? {} : { salt: seed.salt }) },
        operatorId: this.o.operatorId ?? null,
      });
      const opened = { operatorId: this.eventOwner, type: 'round.opened' as const, data: this.present(created) };
      await recordEvents(tx, this.o.modes, [opened], now);
      return created;
    });
    this.current = round;
    this.emit({ type: 'round.opened', round });
    this.at(round.bettingClosesAt, () => this.startRunning(round.id));
  }

  private async startRunning(roundId: string): Promise<void> {
    if (!this.lease) return;
    // As when opening a round: a process frozen past its lease stands down before it writes.
    if (!(await this.lease.isHeld())) return this.standDown();
    const now = this.o.clock.now();
    const found = await this.write(async (tx) => {
      const locked = await roundRepository.byIdForUpdate(tx, roundId);
      if (!locked) throw new Error(`round ${roundId} vanished`);
      // The previous leader started it after this process took the lease: ours to recover, not to skip.
      if (locked.status === 'running') return { by: 'another process' as const, round: locked };
      // Voided during its betting window (operations): nothing to run, go on to the next round.
      if (locked.status !== 'open') return null;
      const r = this.o.driver.prepareRun ? await this.o.driver.prepareRun(tx, locked) : locked;
      const endsAt = now + this.o.driver.runningDurationMs(r);
      const heartbeatAt = this.o.driver.heartbeatMs ? now : null;
      const fields = { running_at: now, ends_at: endsAt, heartbeat_at: heartbeatAt };
      await roundRepository.transition(tx, r, 'running', fields);
      const running: RunningRound = { ...r, status: 'running', runningAt: now, endsAt, heartbeatAt };
      return { by: 'this process' as const, round: running };
    });
    if (!found) {
      this.later(this.o.driver.pauseMs, () => this.serial(() => this.openRound()));
      return;
    }
    if (found.by === 'another process') {
      return this.takeOverRunning(found.round, 'the engine that started the round lost its lease as it did');
    }
    const round = found.round;
    this.current = round;
    this.lastHeartbeat = { roundId: round.id, at: now };
    await this.o.driver.onRunning(round);
    this.emit({ type: 'round.running', round });
    this.scheduleTicks(round);
    this.at(round.endsAt, () => this.closeRound(round.id));
  }

  private scheduleTicks(round: RunningRound): void {
    const tick = (): void => {
      if (this.stopped || this.current?.id !== round.id || this.current.status !== 'running') return;
      const now = this.o.clock.now();
      if (now >= round.endsAt) return;
      this.serial(async () => {
        if (this.current?.id !== round.id || this.current.status !== 'running') return;
        const at = this.o.clock.now();
        const data = await this.o.driver.onTick(round, at, this.write);
        // After the tick's payouts committed, and at the same instant: every auto cash-out due by a
        // recorded heartbeat is already paid, so voiding the round later refunds only what no
        // live engine had reached.
        await this.heartbeat(round, at);
        this.emit({ type: 'round.tick', round, at: this.o.clock.now(), data });
      });
      this.later(this.o.driver.tickMs, tick);
    };
    this.later(this.o.driver.tickMs, tick);
  }

  private async heartbeat(round: Round, at: number): Promise<void> {
    const every = this.o.driver.heartbeatMs;
    if (!every || !this.lease) return;
    if (this.lastHeartbeat.roundId === round.id && at - this.lastHeartbeat.at < every) return;
    try {
      await roundRepository.recordHeartbeat(this.lease, round.id, at);
      this.lastHeartbeat = { roundId: round.id, at };
    } catch (error) {
      // The lease session is gone or the store is unreachable: cash-outs will be refused once the
      // last heartbeat is stale, and the lease watch stands this process down.
      const context = { err: error, game: this.game, round: round.roundNumber };
      this.o.logger.warn(context, 'could not record the round heartbeat');
    }
  }

  private async closeRound(roundId: string): Promise<void> {
    const now = this.o.clock.now();
    const closed = await this.write(async (tx) => {
      const r = await roundRepository.byIdForUpdate(tx, roundId);
      if (!r) throw new Error(`round ${roundId} vanished`);
      if (r.status !== 'running') return null;
      const { outcome, events } = await this.o.driver.close(tx, r, now);
      await roundRepository.transition(tx, r, 'closed', { closed_at: now, outcome: JSON.stringify(outcome) });
      const final = closedWith(r, now, outcome);
      const roundClosed: DomainEvent = {
        operatorId: this.eventOwner,
        type: 'round.closed',
        data: this.present(final),
      };
      await recordEvents(tx, this.o.modes, [roundClosed, ...events], now);
      return final;
    });
    if (closed) {
      this.current = closed;
      this.emit({ type: 'round.closed', round: closed });
    }
    this.later(this.o.driver.pauseMs, () => this.serial(() => this.openRound()));
  }

  private async doVoid(round: Round, reason: string): Promise<void> {
    const now = this.o.clock.now();
    const voided = await this.write(async (tx) => {
      const r = await roundRepository.byIdForUpdate(tx, round.id);
      if (!r || (r.status !== 'open' && r.status !== 'running')) return null;
      const events = await this.o.driver.voidBets(tx, r, now);
      await roundRepository.transition(tx, r, 'void', { voided_at: now, void_reason: reason });
      const final = voidedWith(r, now, reason);
      const roundClosed: DomainEvent = {
        operatorId: this.eventOwner,
        type: 'round.closed',
        data: this.present(final),
      };
      await recordEvents(tx, this.o.modes, [roundClosed, ...events], now);
      return final;
    });
    if (voided) {
      if (this.current?.id === voided.id) this.current = voided;
      this.emit({ type: 'round.voided', round: voided });
    }
  }

  /**
   * Every write of the engine (and its driver's ticks): one transaction whose first statement is the
   * lease's fence, so a process that lost the lease while it was frozen writes nothing, however late
   * it thaws (docs/architecture.md, "Several instances"). A refusal rejects with LeaseLostError.
   */
  private readonly write: WriteTransaction = (work) => {
    const lease = this.lease;
    if (!lease) return Promise.reject(new LeaseLostError(this.leaseName));
    return this.o.db.transaction(async (tx) => {
      await lease.fence(tx);
      return work(tx);
    });
  };

  private get leaseName(): string {
    return `engine:${this.game}${this.o.operatorId ? `:${this.o.operatorId}` : ''}`;
  }

  /**
   * Whether this process may still write as the lease holder. Known held less than one lease check ago
   * (real time): yes, since the server ends a session only after three checks of silence. Otherwise
   * (the process was frozen, or its event loop stalled, since) the lease session is asked first: a
   * holder that thaws after the store ended its session must not pay, settle or close anything from the
   * timers it had queued (docs/architecture.md, "Several instances").
   */
  private async holdsLease(): Promise<boolean> {
    const lease = this.lease;
    if (!lease) return false;
    const checkedAt = performance.now();
    if (checkedAt - this.leaseConfirmedAt < this.leaseCheckMs) return true;
    if (!(await lease.isHeld())) return false;
    this.leaseConfirmedAt = Math.max(this.leaseConfirmedAt, checkedAt);
    return true;
  }

  /**
   * Runs `fn` after every step queued before it, only while this process holds the lease; a failed step
   * is logged and retried later.
   */
  private serial(fn: () => Promise<void>): Promise<void> {
    const run = async (): Promise<void> => {
      if (this.stopped || !this.lease) return;
      try {
        if (!(await this.holdsLease())) return this.standDown();
        await fn();
      } catch (error) {
        // The fence refused a write: nothing was written, and another process may be running the
        // rounds already. Not a failure to retry: stop touching them (standDown logs it once).
        if (error instanceof LeaseLostError) return this.standDown();
        this.o.logger.error({ err: error, game: this.game }, 'round engine step failed; retrying');
        this.emit({ type: 'engine.error', error });
        this.later(this.retryMs, () => void this.serial(fn));
      }
    };
    this.chainTail = this.chainTail.then(run);
    return this.chainTail;
  }

  private at(when: number, fn: () => Promise<void>): void {
    this.later(Math.max(0, when - this.o.clock.now()), () => void this.serial(fn));
  }

  private later(ms: number, fn: () => void): void {
    const handle = this.o.clock.schedule(ms, () => {
      this.timers.delete(handle);
      fn();
    });
    this.timers.add(handle);
  }

  private emit(event: EngineEvent): void {
    this.emitter.emit('event', event);
  }
}
