import type { OutcomeJson } from '../engine/round-presenter';
import type { Logger } from 'pino';
import { endedBet, type ReservedStockRaceBet, type SettledStockRaceBet } from '../../bets/bet';
import { betSettledEvent } from '../../bets/bet-events';
import { betRepository } from '../../bets/bet-repository';
import type { ComplianceHooks } from '../../bets/compliance-hooks';
import { settleBet } from '../../bets/settle-bet';
import { currencyExponent, minorToDecimal } from '../../money/currency';
import type { Operator } from '../../operators/operator';
import type { OperatorModes } from '../../operators/operator-mode';
import type { GameDriver } from '../engine/engine';
import { type ClosedRound, type OpenRound, type Round, type RunningRound, stockRaceOutcomeOf } from '../engine/round';
import type { SqlExecutor } from '../../store/database';
import { settlementRepository } from '../../wallet/settlement-repository';
import { settleIdempotencyKey, type SettleBody } from '../../wallet/settlements';
import type { DomainEvent } from '../../webhooks/domain-event';
import {
  deriveStockRaceOutcome,
  intermediateMoves,
  pctFromBp,
  presentStockRaceOutcome,
  raceKey,
  type StockRaceOutcome,
} from './outcome';
import { prorateToRoundCap, roundPayoutCapMinor, winningPayoutMinor } from './stock-race-rules';

export interface StockRaceGameOptions {
  logger: Logger;
  compliance: ComplianceHooks;
  /** The app's cache of which operators play in test mode (their bets stay out of live metrics). */
  modes: OperatorModes;
  /** Reads an operator inside the settling transaction (settings and wallet_url as committed). */
  operatorOf: (tx: SqlExecutor, operatorId: string) => Promise<Operator>;
  symbols: readonly string[];
  bettingWindowMs: number;
  raceMs: number;
  pauseMs: number;
  tickMs: number;
  /** Delay before the first settle attempt (the wallet retry schedule's first entry). */
  firstSettleDelayMs: number;
}

/** The live state of a running race, as the feed and the round reads show it. */
export interface RaceFrame {
  progress_permille: number;
  elapsed_ms: number;
  stocks: { symbol: string; pct: number }[];
}

/**
 * Stock Race on the shared engine. Betting happens while the round is open; the race runs for a fixed
 * time whose frames converge on the outcome derived from the round's seed; the close settles every
 * reserved bet in the closing transaction, with its bet.settled event and (for seamless-wallet
 * operators) its wallet settle call in the outbox. Nothing is held in memory between steps, so a
 * process that takes a running round over simply finishes it: recoverRunning = 'finish'.
 */
export class StockRaceGame implements GameDriver {
  readonly game = 'stock_race' as const;
  readonly recoverRunning = 'finish' as const;
  readonly bettingWindowMs: number;
  readonly pauseMs: number;
  readonly tickMs: number;

  constructor(private readonly o: StockRaceGameOptions) {
    this.bettingWindowMs = o.bettingWindowMs;
    this.pauseMs = o.pauseMs;
    this.tickMs = o.tickMs;
  }

  roundSettings(): Record<string, unknown> {
    return { symbols: [...this.o.symbols], race_ms: this.o.raceMs };
  }

  roundFields(round: Round): { symbols: string[]; race_ms: number } {
    return { symbols: this.symbolsOf(round), race_ms: this.runningDurationMs(round) };
  }

  presentOutcome(round: ClosedRound): OutcomeJson {
    return presentStockRaceOutcome(stockRaceOutcomeOf(round));
  }

  symbolsOf(round: Round): string[] {
    const frozen = round.settings.symbols;
    return Array.isArray(frozen) ? (frozen as string[]) : [...this.o.symbols];
  }

  runningDurationMs(round: Round): number {
    const frozen = Number(round.settings.race_ms);
    return Number.isSafeInteger(frozen) && frozen > 0 ? frozen : this.o.raceMs;
  }

  async onRunning(): Promise<void> {}

  async onTick(round: RunningRound, now: number): Promise<Record<string, unknown>> {
    return this.liveTick(round, now);
  }

  liveTick(round: RunningRound, now: number): Record<string, unknown> {
    return { ...this.frame(round, now) };
  }

  /** Frames exist only once betting is closed: they converge on the result. */
  frame(round: Round, now: number): RaceFrame | null {
    if (round.status !== 'running') return null;
    const elapsed = Math.max(0, now - round.runningAt);
    const progress = Math.min(1000, Math.floor((elapsed * 1000) / this.runningDurationMs(round)));
    const moves = intermediateMoves(this.raceKeyOf(round), this.symbolsOf(round), progress);
    return {
      progress_permille: progress,
      elapsed_ms: elapsed,
      stocks: moves.map((m) => ({ symbol: m.symbol, pct: pctFromBp(m.pct_bp) })),
    };
  }

  outcomeOf(round: Round): StockRaceOutcome {
    return deriveStockRaceOutcome(this.raceKeyOf(round), this.symbolsOf(round));
  }

  /** The round's chain salt keys the race (see raceKey); rounds from before salted chains use the seed. */
  raceKeyOf(round: Round): string {
    const salt = round.settings.salt;
    return raceKey(round.seed, typeof salt === 'string' ? salt : null);
  }

  async close(
    tx: SqlExecutor,
    round: RunningRound,
    now: number,
  ): Promise<{ outcome: StockRaceOutcome; events: DomainEvent[] }> {
    const symbols = this.symbolsOf(round);
    const outcome = deriveStockRaceOutcome(this.raceKeyOf(round), symbols);
    const pct = pctFromBp(outcome.winner_pct_bp);
    const operators = new Map<string, Operator>();
    const events: DomainEvent[] = [];
    const bets = await betRepository.reservedStockRaceBets(tx, round.id);
    const payouts = await this.payouts(tx, operators, bets, outcome.winner, symbols.length);
    for (const [i, bet] of bets.entries()) {
      const operator = await this.operator(tx, operators, bet.operatorId);
      const won = bet.selections.includes(outcome.winner);
      const settled = await this.finish(tx, bet, won ? 'won' : 'lost', payouts[i]!, now);
      if (!settled) continue;
      events.push(betSettledEvent(settled, { winner: outcome.winner, pct }));
      await this.enqueueSettle(tx, operator, settled, outcome.winner, pct, now);
    }
    return { outcome, events };
  }

  /**
   * What each bet of the round pays: a winner the payout its reserve answer quoted (a bet reserved
   * before quotes were stored: the formula under the settings of now), then, per operator and
   * currency, the winners' total held to the operator's per-round cap as of the close.
   */
  private async payouts(
    tx: SqlExecutor,
    operators: Map<string, Operator>,
    bets: readonly ReservedStockRaceBet[],
    winner: string,
    symbolCount: number,
  ): Promise<number[]> {
    const payouts: number[] = [];
    const winnersByPurse = new Map<string, number[]>();
    for (const [i, bet] of bets.entries()) {
      if (!bet.selections.includes(winner)) {
        payouts.push(0);
        continue;
      }
      const { settings } = await this.operator(tx, operators, bet.operatorId);
      payouts.push(
        bet.potentialPayout ??
          winningPayoutMinor(settings, bet.currency, bet.amount, symbolCount, bet.selections.length),
      );
      const purse = `${bet.operatorId}\n${bet.currency}`;
      const winners = winnersByPurse.get(purse);
      if (winners) winners.push(i);
      else winnersByPurse.set(purse, [i]);
    }
    for (const winners of winnersByPurse.values()) {
      const first = bets[winners[0]!]!;
      const cap = roundPayoutCapMinor(operators.get(first.operatorId)!.settings, first.currency);
      const held = prorateToRoundCap(
        winners.map((i) => payouts[i]!),
        cap,
      );
      for (const [j, i] of winners.entries()) payouts[i] = held[j]!;
    }
    return payouts;
  }

  async voidBets(tx: SqlExecutor, round: OpenRound | RunningRound, now: number): Promise<DomainEvent[]> {
    const operators = new Map<string, Operator>();
    const events: DomainEvent[] = [];
    for (const bet of await betRepository.reservedStockRaceBets(tx, round.id)) {
      const operator = await this.operator(tx, operators, bet.operatorId);
      const settled = await this.finish(tx, bet, 'void', bet.amount, now);
      if (!settled) continue;
      events.push(betSettledEvent(settled, { winner: null, pct: null }));
      await this.enqueueSettle(tx, operator, settled, null, null, now);
    }
    return events;
  }

  private async finish(
    tx: SqlExecutor,
    bet: ReservedStockRaceBet,
    status: SettledStockRaceBet['status'],
    payout: number,
    now: number,
  ): Promise<SettledStockRaceBet | null> {
    return settleBet(tx, this.o, endedBet(bet, status, payout, now), now);
  }

  /**
   * Operators that never had a wallet_url learn the result from the bet.settled webhook only; a
   * sandbox operator without one is settled by the simulated wallet, through the same outbox. One
   * whose URL was cleared (a paused wallet) still gets its rows: they wait, pending, for a new URL.
   */
  private async enqueueSettle(
    tx: SqlExecutor,
    operator: Operator,
    bet: SettledStockRaceBet,
    winner: string | null,
    pct: number | null,
    now: number,
  ): Promise<void> {
    if (!operator.settlesToWallet && operator.mode !== 'test') return;
    const body: SettleBody = {
      bet_id: bet.id,
      winner,
      pct,
      payout: minorToDecimal(bet.payout, currencyExponent(bet.currency)),
      idempotency_key: settleIdempotencyKey(bet.id),
    };
    await settlementRepository.enqueue(tx, {
      operatorId: operator.id,
      body,
      now,
      firstDelayMs: this.o.firstSettleDelayMs,
    });
  }

  private async operator(tx: SqlExecutor, cache: Map<string, Operator>, id: string): Promise<Operator> {
    let operator = cache.get(id);
    if (!operator) {
      operator = await this.o.operatorOf(tx, id);
      cache.set(id, operator);
    }
    return operator;
  }
}
