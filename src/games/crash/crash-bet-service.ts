import type { Bet, CashedOutCrashBet } from '../../bets/bet';
import { betSettledEvent } from '../../bets/bet-events';
import { timeOrderedId } from '../../ids/time-ordered-id';
import type {
  BetCounters,
  CommandRequest,
  CommandRunner,
  IdempotentAnswer,
  PresentRefusal,
  StoredText,
} from '../../bets/bet-commands';
import type { CommandResponse } from '../../idempotency/idempotency-repository';
import type { Clock } from '../../clock/clock';
import type { ComplianceService } from '../../compliance/compliance-service';
import type { BetContext } from '../../bets/bet-context';
import { noCompliance } from '../../bets/compliance-hooks';
import {
  largePayout,
  largeStake,
  MACHINE_TIMING_HORIZON_MS,
  machineTiming,
  type ComplianceSettings,
  velocityRule,
} from '../../compliance/rules';
import { DomainError, isDomainError } from '../../errors/codes';
import type { Operator } from '../../operators/operator';
import type { OperatorModes } from '../../operators/operator-mode';
import type { Database } from '../../store/database';
import { operatorEventRow } from '../../webhooks/event-rows';
import type { Game } from '../engine/round';
import type { CashoutPlan, CrashCommands, TimedRow } from './crash-bet-commands';
import { cashoutCrashBet, type CrashRules, decideCashout, placeCrashBet } from './crash-bets';
import { cashedOutBet } from './crash-rules';

export interface PlacedCrashBet {
  id: string;
  player: string;
  roundNumber: number;
  amount: number;
}

export interface CrashBetServiceDeps {
  db: Database;
  /** The one-unit commands on `db` (app.ts builds them once per store: they own its batchers). */
  commands: CrashCommands;
  clock: Clock;
  idempotency: CommandRunner;
  compliance: ComplianceService;
  /** The app's cache of which operators play in test mode, for the bets the interactive path writes. */
  modes: OperatorModes;
  rules: CrashRules;
  sandbox: {
    touch(operator: Operator, game: Game): Promise<void>;
    noteCrashSettled(operatorId: string, betId: string): void;
  };
  crashGame: { noteSettled(betId: string): void };
  /** Committed facts for the service metrics (never counted for sandbox operators). */
  counters: BetCounters;
}

/** Stands in for the round number while the 200 response is turned into a template around it. */
const ROUND_NUMBER_MARK = Number.MAX_SAFE_INTEGER;

// One instance for every request: the answer is the same, and building an Error (its stack) per bet
// showed in the place-bet profile.
const BETS_CLOSED = new DomainError(
  'BETTING_CLOSED',
  'no Crash round is taking bets right now; retry when the next betting window opens',
);

const asText = (r: CommandResponse): StoredText => ({ statusCode: r.statusCode, response: JSON.stringify(r.body) });

/**
 * The machine-timing rule over a player's latest manual cash-outs (SQLite hands the rows to it).
 */
function timingRule(rules: ComplianceSettings): (recent: TimedRow[]) => boolean {
  return (recent) =>
    machineTiming(
      recent
        .filter((r) => r.running_at !== null && r.settled_at !== null)
        .map((r) => ({ betId: r.id, elapsedMs: Number(r.settled_at) - Number(r.running_at) })),
      rules,
    ) !== null;
}

/**
 * Crash's money commands, each one unit of work in the store: place a bet, cash one out. Everything
 * that needs no store (operator and compliance settings, the request hash, the exact response) is
 * decided here first; the store then claims the idempotency key, checks the round and writes, in
 * one synchronous SQLite unit or one PostgreSQL statement (see bets/bet-commands.ts). What that unit
 * leaves to it (a compliance rule that would raise a flag, state that changed under it) runs the
 * interactive path of crash-bets.ts, with the same results.
 */
export class CrashBetService {
  /** What the interactive path writes a bet with: a live operator's bets run the compliance rules, a sandbox's none. */
  private readonly liveWrites: BetContext;
  private readonly sandboxWrites: BetContext;

  constructor(private readonly d: CrashBetServiceDeps) {
    this.liveWrites = { compliance: d.compliance, modes: d.modes };
    this.sandboxWrites = { compliance: noCompliance, modes: d.modes };
  }

  async placeBet(
    operator: Operator,
    input: { externalUserId: string; amount: number; autoCashout: number | null },
    request: CommandRequest,
    present: { refused: PresentRefusal; placed: (bet: PlacedCrashBet) => unknown },
  ): Promise<IdempotentAnswer> {
    const live = operator.mode !== 'test';
    // A test-mode operator plays only in its own sandbox rounds; everyone else only in live ones.
    if (!live) await this.d.sandbox.touch(operator, 'crash');
    // The idempotency scope: the request's key, route, body and signature, under this operator.
    const scope = { operatorId: operator.id, ...request };
    let bet: PlacedCrashBet | null = null;
    // When the bet was asked for: the full path (a stake that raises a flag) decides at this instant
    // too, so a bet asked for inside the betting window is not refused because writing it took longer.
    let askedAt: number | null = null;
    const respond = (roundNumber: number): CommandResponse => ({
      statusCode: 200,
      body: present.placed({ id: bet!.id, player: bet!.player, roundNumber, amount: bet!.amount }),
    });
    const result = await this.d.idempotency.command(
      scope,
      async (claim) => {
        const now = claim.now;
        askedAt = now;
        const max = operator.settings.crash.max_payout_per_bet;
        const refusal =
          input.amount > max
            ? present.refused(
                new DomainError('STAKE_OUT_OF_RANGE', `amount exceeds this operator's maximum payout per bet (${max})`),
              )
            : null;
        const rules = live ? await this.d.compliance.settingsFor(this.d.db, operator.id, now) : null;
        // A bet that raises a flag is rare: the full path writes it with its flag and event.
        if (!refusal && rules && largeStake(input.amount, rules)) return { outcome: 'full_path' };
        bet = {
          id: timeOrderedId(now),
          player: input.externalUserId,
          roundNumber: ROUND_NUMBER_MARK,
          amount: input.amount,
        };
        const [prefix, suffix, extra] = JSON.stringify(present.placed(bet)).split(String(ROUND_NUMBER_MARK));
        if (suffix === undefined || extra !== undefined) return { outcome: 'full_path' };
        const closed = refusal ? null : present.refused(BETS_CLOSED);
        const answer = await this.d.commands.placeBet({
          claim,
          refusal: refusal && asText(refusal),
          game: 'crash',
          world: live ? null : operator.id,
          roundId: null,
          closed: closed && asText(closed),
          placed: { prefix: prefix!, suffix },
          bet: {
            // Field by field, not `...bet`: a spread followed by more properties is a slow path on
            // Node 20 (see placementOf in bets/bet.ts).
            id: bet.id,
            player: bet.player,
            amount: bet.amount,
            sessionId: null,
            currency: null,
            autoCashout: input.autoCashout,
            selections: null,
            status: 'active',
            // The cap this bet is paid under, whatever the operator sets later (bets/bet.ts).
            potentialPayout: max,
          },
          velocity: velocityRule(rules, now),
        });
        if (!('outcome' in answer)) return answer;
        if (answer.outcome === 'refused') return (refusal ?? closed)!;
        if (answer.outcome !== 'placed') return answer;
        if (live) this.d.counters.betPlaced('crash');
        return respond(answer.round_number);
      },
      present.refused,
      async (tx) => {
        const placed = await placeCrashBet(
          tx,
          live ? this.liveWrites : this.sandboxWrites,
          operator,
          input,
          askedAt ?? this.d.clock.now(),
        );
        bet = { id: placed.id, player: placed.player, roundNumber: placed.roundNumber, amount: placed.amount };
        return respond(placed.roundNumber);
      },
    );
    return result;
  }

  async cashout(
    operator: Operator,
    betId: string,
    request: CommandRequest,
    present: { refused: PresentRefusal; cashedOut: (bet: CashedOutCrashBet) => unknown },
  ): Promise<IdempotentAnswer> {
    const live = operator.mode !== 'test';
    // The idempotency scope: the request's key, route, body and signature, under this operator.
    const scope = { operatorId: operator.id, ...request };
    // When the cash-out was asked for: the full path decides at this instant too, not when it gets to
    // run (a large payout goes there, and deciding later paid a higher multiplier, or refused a cash-out
    // asked for before the crash as one after it).
    let askedAt: number | null = null;
    const result = await this.d.idempotency.command(
      scope,
      async (claim) => {
        askedAt = claim.now;
        const rules = live ? await this.d.compliance.settingsFor(this.d.db, operator.id, claim.now) : null;
        let plan: CashoutPlan | null = null;
        let settled: CashedOutCrashBet | null = null;
        let refusal: CommandResponse | null = null;
        let body: unknown = null;
        const answer = await this.d.commands.cashout(claim, betId, (bet, round) => {
          ({ plan, settled, refusal, body } = this.planCashout(operator, betId, bet, round, claim.now, rules, present));
          return plan;
        });
        if (!('outcome' in answer)) return answer;
        if (answer.outcome === 'refused') return refusal!;
        if (answer.outcome !== 'settled') return answer;
        if (live) this.countSettled(settled!);
        return { statusCode: 200, body };
      },
      present.refused,
      async (tx) => {
        const bet = await cashoutCrashBet(
          tx,
          live ? this.liveWrites : this.sandboxWrites,
          this.d.rules,
          operator,
          betId,
          askedAt ?? this.d.clock.now(),
        );
        return { statusCode: 200, body: present.cashedOut(bet) };
      },
    );
    // In-memory changes follow the store, never a replay or a refusal.
    if (!result.replayed && result.statusCode === 200) {
      if (live) this.d.crashGame.noteSettled(betId);
      else this.d.sandbox.noteCrashSettled(operator.id, betId);
    }
    return result;
  }

  private planCashout(
    operator: Operator,
    betId: string,
    bet: Bet | undefined,
    round: Parameters<typeof decideCashout>[4],
    now: number,
    rules: ComplianceSettings | null,
    present: { refused: PresentRefusal; cashedOut: (bet: CashedOutCrashBet) => unknown },
  ): { plan: CashoutPlan; settled: CashedOutCrashBet | null; refusal: CommandResponse | null; body: unknown } {
    let decision: ReturnType<typeof decideCashout>;
    try {
      decision = decideCashout(this.d.rules, operator, betId, bet, round, now);
    } catch (error) {
      if (!isDomainError(error)) throw error;
      const refusal = present.refused(error);
      return { plan: { refusal: asText(refusal) }, settled: null, refusal, body: null };
    }
    const max = operator.settings.crash.max_payout_per_bet;
    const settled = cashedOutBet(decision.bet, decision.multiplier, decision.kind, max, now);
    const payout = settled.payout;
    if (rules && largePayout(settled.status, payout, rules))
      return { plan: { fullPath: 'large payout' }, settled, refusal: null, body: null };
    const body = present.cashedOut(settled);
    const streak = rules ? Math.floor(rules.machine_timing_streak) : 0;
    const timed = rules !== null && decision.kind === 'manual' && streak >= 2 && rules.machine_timing_window_ms >= 0;
    const plan: CashoutPlan = {
      settle: { payout, multiplier: decision.multiplier, kind: decision.kind },
      response: { statusCode: 200, response: JSON.stringify(body) },
      aliveSince: now - this.d.rules.engineStaleMs,
      event: operatorEventRow(betSettledEvent(settled), now, operator.mode !== 'test'),
      timing: timed
        ? {
            streak,
            windowMs: rules.machine_timing_window_ms,
            since: now - MACHINE_TIMING_HORIZON_MS,
            decide: timingRule(rules),
          }
        : null,
    };
    return { plan, settled, refusal: null, body };
  }

  private countSettled(bet: CashedOutCrashBet): void {
    this.d.counters.cashedOut(bet.game, bet.payout, bet.currency);
  }
}
