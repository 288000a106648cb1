import type { OutcomeJson } from '../engine/round-presenter';
import type { Logger } from 'pino';
import { type ActiveCrashBet, type CashedOutCrashBet, type EndedCrashBet, endedBet } from '../../bets/bet';
import { betSettledEvent } from '../../bets/bet-events';
import { betRepository } from '../../bets/bet-repository';
import type { ComplianceHooks } from '../../bets/compliance-hooks';
import { settleBet, settleBets } from '../../bets/settle-bet';
import type { OperatorSettings } from '../../operators/operator';
import type { OperatorModes } from '../../operators/operator-mode';
import type { GameDriver } from '../engine/engine';
import {
  type ClosedRound,
  type CrashOutcome,
  crashOutcomeOf,
  type OpenRound,
  type Round,
  type RunningRound,
} from '../engine/round';
import type { Database, SqlExecutor, WriteTransaction } from '../../store/database';
import type { DomainEvent } from '../../webhooks/domain-event';
import { recordEvents } from '../../webhooks/events';
import {
  afterExit,
  cashedOutBet,
  crashPointOf,
  effectiveTarget,
  type ExitCursor,
  liveMultiplier,
  type PayoutCaps,
  type PlannedExit,
  type RoundExposure,
  scriptedCrashPoint,
  walkExits,
} from './crash-rules';
import { engineHeartbeatMs } from '../../config/game-defaults';
import { crashElapsedMs, formatMultiplier, GROWTH_PER_MS, presentCrashOutcome } from './multiplier';

export interface CrashGameOptions {
  db: Database;
  logger: Logger;
  compliance: ComplianceHooks;
  /** The app's cache of which operators play in test mode (their bets stay out of live metrics). */
  modes: OperatorModes;
  settingsOf: (operatorId: string) => Promise<OperatorSettings>;
  bettingWindowMs: number;
  pauseMs: number;
  tickMs: number;
  /** How often the engine records that a running round is alive; derived from tickMs by default. */
  heartbeatMs?: number;
  salt: string;
  houseEdgeBp: number;
}

type Exit = PlannedExit<ActiveCrashBet>;

/** One operator's bets that leave on their own, sorted by exit multiplier, and how far a tick has read. */
interface ExitQueue {
  exits: Exit[];
  next: number;
}

/**
 * Crash on the shared engine. While a round runs, bets that leave on their own (auto cash-out or the
 * per-bet cap) wait in one list per operator sorted by exit multiplier: each tick pops the due prefix,
 * so a tick costs what it pays out, not what the round holds. Each is paid at exactly its target, and
 * once an operator's per-round cap is reached every bet of it still in is paid at the force point
 * (walkExits), also when the round crashed before a tick got there.
 */
export class CrashGame implements GameDriver {
  readonly game = 'crash' as const;
  readonly recoverRunning = 'void' as const;
  readonly bettingWindowMs: number;
  readonly pauseMs: number;
  readonly tickMs: number;
  // Players cash out while the round runs, on any instance: they need proof the engine is alive.
  readonly heartbeatMs: number;
  private queues = new Map<string, ExitQueue>();
  /**
   * Per operator: the stake of its bets this process still counts in, and what the round paid it.
   * A bet that left by hand (noteSettled, or another instance) stays counted at its stake until the
   * next read of the store (syncWithStore): that overstates the exposure, so a force point is never
   * missed, only checked against the store once more.
   */
  private exposure = new Map<string, RoundExposure>();
  private active = new Map<string, ActiveCrashBet>();
  private settings = new Map<string, OperatorSettings>();
  private roundId: string | null = null;

  constructor(private readonly o: CrashGameOptions) {
    this.bettingWindowMs = o.bettingWindowMs;
    this.pauseMs = o.pauseMs;
    this.tickMs = o.tickMs;
    this.heartbeatMs = o.heartbeatMs ?? engineHeartbeatMs(o.tickMs);
  }

  roundSettings(): Record<string, unknown> {
    return { salt: this.o.salt, house_edge_bp: this.o.houseEdgeBp, growth_per_ms: GROWTH_PER_MS };
  }

  /** Needs only what fixes the outcome: the seed, the frozen settings, and whether it is a sandbox round. */
  crashPoint(round: Pick<Round, 'seed' | 'settings' | 'operatorId'>): number {
    const scripted = scriptedCrashPoint(round);
    if (scripted !== null) return scripted;
    const { salt, house_edge_bp } = this.roundFields(round);
    return crashPointOf(round.seed, salt, house_edge_bp);
  }

  /** What anyone needs, with the revealed seed, to recompute this round: frozen when it opened. */
  roundFields(round: Pick<Round, 'settings'>): { salt: string; house_edge_bp: number } {
    return {
      salt: String(round.settings.salt ?? this.o.salt),
      house_edge_bp: Number(round.settings.house_edge_bp ?? this.o.houseEdgeBp),
    };
  }

  presentOutcome(round: ClosedRound): OutcomeJson {
    return presentCrashOutcome(crashOutcomeOf(round));
  }

  runningDurationMs(round: OpenRound): number {
    return crashElapsedMs(this.crashPoint(round));
  }

  async onRunning(round: RunningRound): Promise<void> {
    this.roundId = round.id;
    this.queues.clear();
    this.exposure.clear();
    this.active.clear();
    this.settings.clear();
    const bets = await betRepository.activeCrashBets(this.o.db, round.id);
    for (const [operatorId, exits] of await this.ownExitsByOperator(bets)) {
      this.queues.set(operatorId, { exits, next: 0 });
      let open = 0;
      for (const exit of exits) {
        this.active.set(exit.bet.id, exit.bet);
        open += exit.bet.amount;
      }
      // A running round is never taken over (recoverRunning 'void'): nothing of it was paid yet.
      this.exposure.set(operatorId, { open, paid: 0 });
    }
  }

  /** Each operator's bets with where they leave on their own (auto target, per-bet cap), rising. */
  private async ownExitsByOperator(bets: readonly ActiveCrashBet[]): Promise<Map<string, Exit[]>> {
    const byOperator = new Map<string, Exit[]>();
    for (const bet of bets) {
      const target = effectiveTarget(bet, (await this.settingsFor(bet.operatorId)).crash.max_payout_per_bet);
      let exits = byOperator.get(bet.operatorId);
      if (!exits) byOperator.set(bet.operatorId, (exits = []));
      exits.push({ bet, at: target.at, kind: target.kind });
    }
    for (const exits of byOperator.values()) exits.sort((a, b) => a.at - b.at);
    return byOperator;
  }

  async onTick(round: RunningRound, now: number, write: WriteTransaction): Promise<Record<string, unknown>> {
    const crash = this.crashPoint(round);
    const m = liveMultiplier(now - round.runningAt, crash);
    const due: Exit[] = [];
    for (const [operatorId, queue] of this.queues) await this.collectDue(round, operatorId, queue, m, due);
    if (due.length > 0 && this.roundId === round.id) {
      const cashedOut: CashedOutCrashBet[] = [];
      for (const exit of due) cashedOut.push(await this.cashedOut(exit.bet, exit.at, exit.kind, now));
      // One write for the tick's whole due prefix: a tick's cost grows with its payouts, not by a round
      // trip per bet, so hundreds of auto cash-outs on one tick keep the cadence.
      const paid = await write(async (tx) => {
        const settled = await settleBets(tx, this.o, cashedOut, now);
        const events: DomainEvent[] = [];
        for (const bet of settled) if (bet) events.push(betSettledEvent(bet));
        await recordEvents(tx, this.o.modes, events, now);
        return settled.map((bet) => (bet ? bet.payout : null));
      });
      for (const [i, exit] of due.entries()) this.forget(exit.bet, paid[i]!);
    }
    return this.liveTick(round, now);
  }

  // The live feed goes to every operator and player: it carries the curve only, nothing about bets.
  liveTick(round: RunningRound, now: number): Record<string, unknown> {
    const m = liveMultiplier(now - round.runningAt, this.crashPoint(round));
    return { multiplier: formatMultiplier(m), elapsed_ms: Math.max(0, now - round.runningAt) };
  }

  /**
   * The exits of one operator due by multiplier `m`: its bets' own exits before its per-round force
   * point, then, once the curve has reached that point, every bet of it still in, at the point.
   */
  private async collectDue(round: RunningRound, operatorId: string, queue: ExitQueue, m: number, due: Exit[]) {
    const caps = await this.capsOf(operatorId);
    const cursor = this.cursorOf(queue);
    let walk = walkExits(cursor, this.exposureOf(operatorId), caps, m);
    if (walk.forcedAt !== null && this.roundId === round.id) {
      // Players cash out through every instance, and only the ones this process served are known
      // here: before forcing anyone out, take what left the round, and what it was paid, from the store.
      await this.syncWithStore(round.id, operatorId);
      const taken = walk.taken.filter((exit) => this.active.has(exit.bet.id));
      let exposure = this.exposureOf(operatorId);
      for (const exit of taken) exposure = afterExit(exposure, exit, caps.perBet);
      const more = walkExits(cursor, exposure, caps, m);
      walk = { taken: taken.concat(more.taken), forcedAt: more.forcedAt, exposure: more.exposure };
    }
    for (const exit of walk.taken) due.push(exit);
    if (walk.forcedAt === null) return;
    for (let exit = cursor.peek(); exit !== undefined; cursor.take(), exit = cursor.peek()) {
      due.push({ bet: exit.bet, at: walk.forcedAt, kind: 'forced' });
    }
  }

  /** Reads a queue from where the last tick stopped, passing over bets that already left by hand. */
  private cursorOf(queue: ExitQueue): ExitCursor<ActiveCrashBet> {
    return {
      peek: () => {
        let exit = queue.exits[queue.next];
        while (exit !== undefined && !this.active.has(exit.bet.id)) exit = queue.exits[++queue.next];
        return exit;
      },
      take: () => {
        queue.next++;
      },
    };
  }

  /** A manual cash-out served by this process: stop tracking the bet (its payout is read at the next sync). */
  noteSettled(betId: string): void {
    const bet = this.active.get(betId);
    if (bet) this.forget(bet, null);
  }

  async close(
    tx: SqlExecutor,
    round: RunningRound,
    now: number,
  ): Promise<{ outcome: CrashOutcome; events: DomainEvent[] }> {
    const crash = this.crashPoint(round);
    const events: DomainEvent[] = [];
    // Decided from the store, not from memory: a bet whose exit was due at or below the crash point
    // is paid at it even if a tick never got to it, so is an operator's per-round force point, and
    // everything else in the round loses.
    const byOperator = await this.ownExitsByOperator(await betRepository.activeCrashBets(tx, round.id));
    const paidTo = await betRepository.crashPaidByOperator(tx, round.id);
    for (const [operatorId, exits] of byOperator) {
      let open = 0;
      for (const exit of exits) open += exit.bet.amount;
      let next = 0;
      const cursor = { peek: () => exits[next], take: () => void next++ };
      const exposure = { open, paid: paidTo.get(operatorId) ?? 0 };
      const { taken, forcedAt } = walkExits(cursor, exposure, await this.capsOf(operatorId), crash);
      for (const exit of taken) {
        const settled = await this.settle(tx, exit.bet, exit.at, exit.kind, now);
        if (settled) events.push(betSettledEvent(settled));
      }
      for (const { bet } of exits.slice(next)) {
        const settled =
          forcedAt !== null
            ? await this.settle(tx, bet, forcedAt, 'forced', now)
            : await this.finish(tx, bet, { status: 'lost', payout: 0 }, now);
        if (settled) events.push(betSettledEvent(settled));
      }
    }
    this.roundId = null;
    this.active.clear();
    this.queues.clear();
    return { outcome: { crash_point: crash }, events };
  }

  async voidBets(tx: SqlExecutor, round: OpenRound | RunningRound, now: number): Promise<DomainEvent[]> {
    const events: DomainEvent[] = [];
    for (const bet of await betRepository.activeCrashBets(tx, round.id)) {
      const settled = await this.finish(tx, bet, { status: 'void', payout: bet.amount }, now);
      if (settled) events.push(betSettledEvent(settled));
    }
    if (this.roundId === round.id) {
      this.roundId = null;
      this.active.clear();
      this.queues.clear();
    }
    return events;
  }

  private async settle(
    tx: SqlExecutor,
    bet: ActiveCrashBet,
    multiplier: number,
    kind: 'auto' | 'forced',
    now: number,
  ): Promise<CashedOutCrashBet | null> {
    return settleBet(tx, this.o, await this.cashedOut(bet, multiplier, kind, now), now);
  }

  private async cashedOut(
    bet: ActiveCrashBet,
    multiplier: number,
    kind: 'auto' | 'forced',
    now: number,
  ): Promise<CashedOutCrashBet> {
    const s = await this.settingsFor(bet.operatorId);
    return cashedOutBet(bet, multiplier, kind, s.crash.max_payout_per_bet, now);
  }

  private async finish(
    tx: SqlExecutor,
    bet: ActiveCrashBet,
    result: { status: 'lost' | 'void'; payout: number },
    now: number,
  ): Promise<EndedCrashBet | null> {
    return settleBet(tx, this.o, endedBet(bet, result.status, result.payout, now), now);
  }

  /**
   * Forgets the operator's bets that were settled elsewhere (a cash-out taken by another instance),
   * and takes its exposure from the store: the stake still in, and what its cash-outs were paid.
   */
  private async syncWithStore(roundId: string, operatorId: string): Promise<void> {
    const { activeIds, open, paid } = await betRepository.crashStanding(this.o.db, roundId, operatorId);
    for (const bet of [...this.active.values()]) {
      if (bet.operatorId === operatorId && !activeIds.has(bet.id)) this.active.delete(bet.id);
    }
    this.exposure.set(operatorId, { open, paid });
  }

  /**
   * A bet left the round. Paid by this process's tick (`payout` known): its stake leaves the exposure
   * and its payout joins what was paid. Left by hand, or settled by someone else first (null): it stays
   * counted at its stake until the next sync reads what it was paid.
   */
  private forget(bet: ActiveCrashBet, payout: number | null): void {
    if (!this.active.delete(bet.id) || payout === null) return;
    const { open, paid } = this.exposureOf(bet.operatorId);
    this.exposure.set(bet.operatorId, { open: open - bet.amount, paid: paid + payout });
  }

  private exposureOf(operatorId: string): RoundExposure {
    return this.exposure.get(operatorId) ?? { open: 0, paid: 0 };
  }

  private async capsOf(operatorId: string): Promise<PayoutCaps> {
    const { crash } = await this.settingsFor(operatorId);
    return { perBet: crash.max_payout_per_bet, perRound: crash.max_payout_per_round };
  }

  private async settingsFor(operatorId: string): Promise<OperatorSettings> {
    let s = this.settings.get(operatorId);
    if (!s) {
      s = await this.o.settingsOf(operatorId);
      this.settings.set(operatorId, s);
    }
    return s;
  }
}
