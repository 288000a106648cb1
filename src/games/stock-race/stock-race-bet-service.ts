import type { ReservedStockRaceBet } from '../../bets/bet';
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
import { largeStake, velocityRule } from '../../compliance/rules';
import { isDomainError } from '../../errors/codes';
import type { Operator } from '../../operators/operator';
import type { OperatorModes } from '../../operators/operator-mode';
import type { Database, SqlExecutor } from '../../store/database';
import type { Game } from '../engine/round';
import type { ReservePlan, StockRaceCommands } from './stock-race-bet-commands';
import { decideReserve, decideSession, type ReserveInput, reserveStockRaceBet } from './stock-race-bets';

export interface StockRaceBetServiceDeps {
  db: Database;
  /** The one-unit commands on `db` (app.ts builds them once per store: they own its batchers). */
  commands: StockRaceCommands;
  clock: Clock;
  idempotency: CommandRunner;
  compliance: ComplianceService;
  /** The app's cache of which operators play in test mode, for the bets the interactive path writes. */
  modes: OperatorModes;
  sandbox: {
    touch(operator: Operator, game: Game): Promise<void>;
    /** A sandbox without a wallet server pays stakes from its simulated wallet, in the bet's transaction. */
    debitSimulatedWallet(
      tx: SqlExecutor,
      operatorId: string,
      player: string,
      currency: string,
      amount: number,
      now: number,
      betId: string,
    ): Promise<unknown>;
  };
  counters: BetCounters;
}

/** Stands in for the round number while the 200 response is turned into a template around it. */
const ROUND_NUMBER_MARK = Number.MAX_SAFE_INTEGER;

const asText = (r: CommandResponse): StoredText => ({ statusCode: r.statusCode, response: JSON.stringify(r.body) });

/**
 * Stock Race's money command: reserve a bet whose stake the operator holds in its wallet, as one
 * unit of work in the store (see CrashBetService for the shape). A sandbox operator without a
 * wallet server pays from its simulated wallet: that runs through the full interactive path.
 */
export class StockRaceBetService {
  /** What the interactive path writes a bet with: a live operator's bets run the compliance rules, a sandbox's none. */
  private readonly liveWrites: BetContext;
  private readonly sandboxWrites: BetContext;

  constructor(private readonly d: StockRaceBetServiceDeps) {
    this.liveWrites = { compliance: d.compliance, modes: d.modes };
    this.sandboxWrites = { compliance: noCompliance, modes: d.modes };
  }

  async reserve(
    operator: Operator,
    input: ReserveInput,
    request: CommandRequest,
    present: { refused: PresentRefusal; reserved: (bet: ReservedStockRaceBet, potentialPayout: number) => unknown },
  ): Promise<IdempotentAnswer> {
    const live = operator.mode !== 'test';
    if (!live) await this.d.sandbox.touch(operator, 'stock_race');
    // The idempotency scope: the request's key, route, body and signature, under this operator.
    const scope = { operatorId: operator.id, ...request };
    // When the reservation was asked for: the full path decides at this instant too (window, session
    // expiry), so a request made in time is not refused because writing it took longer.
    let askedAt: number | null = null;
    return this.d.idempotency.command(
      scope,
      async (claim) => {
        const now = claim.now;
        askedAt = now;
        if (!live && !operator.walletUrl) return { outcome: 'full_path' };
        const rules = live ? await this.d.compliance.settingsFor(this.d.db, operator.id, now) : null;
        let refusal: CommandResponse | null = null;
        let bet: ReservedStockRaceBet | null = null;
        let potentialPayout = 0;
        const answer = await this.d.commands.reserve(
          claim,
          input.sessionId,
          input.roundId,
          (session, round): ReservePlan => {
            let decided: ReturnType<typeof decideReserve>;
            try {
              decided = decideReserve(operator, input, decideSession(operator, input, session, now), round, now);
            } catch (error) {
              if (!isDomainError(error)) throw error;
              refusal = present.refused(error);
              return { refusal: asText(refusal) };
            }
            if (rules && largeStake(decided.stake, rules)) return { fullPath: 'large stake' };
            potentialPayout = decided.potentialPayout;
            bet = {
              id: timeOrderedId(now),
              operatorId: operator.id,
              game: 'stock_race',
              roundId: decided.round.id,
              roundNumber: ROUND_NUMBER_MARK,
              player: session!.playerRef,
              sessionId: session!.id,
              currency: session!.currency,
              amount: decided.stake,
              autoCashout: null,
              selections: [...input.selectedStocks],
              status: 'reserved',
              placedAt: now,
              potentialPayout: decided.potentialPayout,
            };
            const [prefix, suffix, extra] = JSON.stringify(present.reserved(bet, potentialPayout)).split(
              String(ROUND_NUMBER_MARK),
            );
            if (suffix === undefined || extra !== undefined) return { fullPath: 'no response template' };
            return {
              command: {
                refusal: null,
                game: 'stock_race',
                world: live ? null : operator.id,
                roundId: decided.round.id,
                closed: null,
                placed: { prefix: prefix!, suffix },
                bet: {
                  id: bet.id,
                  player: bet.player,
                  sessionId: bet.sessionId,
                  currency: bet.currency,
                  amount: bet.amount,
                  autoCashout: null,
                  selections: JSON.stringify(bet.selections),
                  status: 'reserved',
                  potentialPayout: bet.potentialPayout,
                },
                velocity: velocityRule(rules, now),
              },
            };
          },
        );
        if (!('outcome' in answer)) return answer;
        if (answer.outcome === 'refused') return refusal!;
        if (answer.outcome !== 'placed') return answer;
        if (live) this.d.counters.betPlaced('stock_race');
        // Not `{ ...bet, roundNumber }`: a spread followed by more properties is a slow path on Node 20.
        const placed: ReservedStockRaceBet = Object.assign({}, bet!, { roundNumber: answer.round_number });
        return { statusCode: 200, body: present.reserved(placed, potentialPayout) };
      },
      present.refused,
      async (tx) => {
        const { bet, potentialPayout } = await reserveStockRaceBet(
          tx,
          live ? this.liveWrites : this.sandboxWrites,
          operator,
          input,
          askedAt ?? this.d.clock.now(),
        );
        // With no wallet server, a sandbox's simulated wallet holds the player's balance: it pays the stake.
        if (!live && !operator.walletUrl) {
          await this.d.sandbox.debitSimulatedWallet(
            tx,
            operator.id,
            bet.player,
            bet.currency!,
            bet.amount,
            this.d.clock.now(),
            bet.id,
          );
        }
        return { statusCode: 200, body: present.reserved(bet, potentialPayout) };
      },
    );
  }
}
