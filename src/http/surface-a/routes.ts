import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type, type Static } from 'typebox';
import { type CashedOutCrashBet, type CrashBet, resultOf } from '../../bets/bet';
import type { CommandRequest, IdempotentAnswer, PresentRefusal } from '../../bets/bet-commands';
import type { PlacedCrashBet } from '../../games/crash/crash-bet-service';
import { formatMultiplier, parseMultiplier } from '../../games/crash/multiplier';
import { liveMultiplier } from '../../games/crash/crash-rules';
import { DomainError } from '../../errors/codes';
import type { Operator } from '../../operators/operator';
import type { Round } from '../../games/engine/round';
import type { AppServices } from '../../services';
import { SURFACE_A_STATUS } from '../error-maps';
import { idempotencyKeyOf, refusalIn, replayable, replayableErrors, sendAnswer } from '../keyed-write';
import { withRetryAfter } from '../openapi';
import { EVENT_STREAM, operatorStreamTerms, streamFeed } from '../sse';
import { guardSurface } from '../surface/guard-surface';
import type { Surface } from '../surface/surface';
import {
  AuthHeaders,
  BetIdParams,
  CashoutBody,
  CashoutResult,
  CrashBetList,
  CrashBetListQuery,
  CrashBetView,
  ErrorA,
  FaultA,
  IdempotentHeaders,
  PlaceBetBody,
  PlacedBet,
  RoundNumberParams,
  RoundView,
} from './schemas';

export const surfaceA: Surface = {
  name: 'A',
  headers: { apiKey: 'x-api-key', signature: 'x-signature', timestamp: 'x-timestamp' },
  status: SURFACE_A_STATUS,
  // Every 5xx carries the trace id (the x-request-id header) to quote when reporting it.
  errorBody: (code, message, traceId) =>
    SURFACE_A_STATUS[code] >= 500 ? { error: message, code, trace_id: traceId } : { error: message, code },
};

const errors = withRetryAfter({
  400: ErrorA,
  401: ErrorA,
  403: ErrorA,
  404: ErrorA,
  409: ErrorA,
  413: ErrorA,
  // A body sent as anything but JSON (or encoded) is refused before it is parsed.
  415: ErrorA,
  429: ErrorA,
  500: FaultA,
  // Shared state (store, Redis) unreachable, or the instance shutting down: retry after Retry-After.
  503: FaultA,
});

export function presentCrashBet(bet: CrashBet, livemode: boolean): Static<typeof CrashBetView> {
  const result = resultOf(bet);
  return {
    livemode,
    bet_id: bet.id,
    external_user_id: bet.player,
    round_id: bet.roundId,
    round_number: bet.roundNumber,
    amount: bet.amount,
    auto_cashout: bet.autoCashout === null ? null : formatMultiplier(bet.autoCashout),
    status: bet.status,
    payout: result.payout,
    multiplier: result.cashoutMultiplier === null ? null : formatMultiplier(result.cashoutMultiplier),
    cashout_kind: result.cashoutKind,
    placed_at: bet.placedAt,
    settled_at: result.settledAt,
  };
}

/** place-bet's 200 body, for a bet whose auto cash-out was sent as `autoCashout`. */
function placedPresenter(
  autoCashout: Static<typeof PlaceBetBody>['auto_cashout'] | null,
  test: boolean,
): (bet: PlacedCrashBet) => unknown {
  return (bet) => ({
    bet_id: bet.id,
    external_user_id: bet.player,
    round_number: bet.roundNumber,
    amount: bet.amount,
    auto_cashout: autoCashout,
    // The spec fixes the live body; test data says what it is.
    ...(test ? { livemode: false } : {}),
  });
}

/** cash-out's 200 body. */
function presentCashedOut(bet: CashedOutCrashBet): Static<typeof CashoutResult> {
  return { bet_id: bet.id, payout: bet.payout, multiplier: formatMultiplier(bet.cashoutMultiplier) };
}

/** Bets per page of `GET /bets` when the request does not say. */
const DEFAULT_PAGE_LIMIT = 20;

/**
 * The service writes bet ids in lower case, and a UUID is case-insensitive on input (RFC 9562): an
 * integrator whose database hands UUIDs back in upper case (SQL Server's uniqueidentifier) must still
 * find its bet. The schema accepts either case, so the lookup takes the canonical form.
 */
const canonicalBetId = (betId: string): string => betId.toLowerCase();

/** Surface A, the partner API: Crash. Routes are thin: schema → authenticate → domain → present. */
export async function surfaceARoutes(app: FastifyInstance, s: AppServices): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  guardSurface(app, surfaceA, s, { ownsNotFound: true });
  // Test-mode operators play in their own sandbox rounds.
  const isTest = (operator: Operator): boolean => operator.mode === 'test';
  const scopeOf = (operator: Operator): string | null => (isTest(operator) ? operator.id : null);

  /** The command's request: the key header (required), the route and body it hashes, the signature it records. */
  const commandRequest = (req: FastifyRequest): CommandRequest => {
    const key = idempotencyKeyOf(req);
    if (key === undefined || key.length === 0) {
      throw new DomainError('IDEMPOTENCY_KEY_MISSING', 'the Idempotency-Key header is required on this POST');
    }
    return { key, route: `${req.method} ${req.routeOptions.url}`, body: req.body, signature: req.signatureRecord };
  };
  const refusedFor = (req: FastifyRequest): PresentRefusal => refusalIn(surfaceA, req);
  const send = (reply: FastifyReply, result: IdempotentAnswer): never => sendAnswer(reply, result) as never;

  r.post(
    '/place-bet',
    {
      // A repeat of the same signed bytes is the idempotent retry only under the same Idempotency-Key.
      config: { replay: 'idempotency-key' },
      schema: {
        summary: 'Place a Crash bet in the current betting window',
        tags: ['Crash'],
        headers: IdempotentHeaders,
        body: PlaceBetBody,
        response: { 200: replayable(PlacedBet), ...replayableErrors(errors) },
      },
    },
    async (req, reply) => {
      const body = req.body;
      let autoCashout: number | null = null;
      if (body.auto_cashout !== undefined && body.auto_cashout !== null) {
        autoCashout = parseMultiplier(body.auto_cashout);
        if (autoCashout === null)
          throw new DomainError('VALIDATION_FAILED', 'field "auto_cashout" must have at most 2 decimals');
      }
      const operator = req.operator!;
      const request = commandRequest(req);
      const result = await s.crashBets.placeBet(
        operator,
        { externalUserId: body.external_user_id, amount: body.amount, autoCashout },
        request,
        {
          refused: refusedFor(req),
          placed: placedPresenter(body.auto_cashout ?? null, isTest(operator)),
        },
      );
      return send(reply, result);
    },
  );

  r.post(
    '/cashout',
    {
      // A repeat of the same signed bytes is the idempotent retry only under the same Idempotency-Key.
      config: { replay: 'idempotency-key' },
      schema: {
        summary: 'Cash out an active Crash bet at the current multiplier',
        tags: ['Crash'],
        headers: IdempotentHeaders,
        body: CashoutBody,
        response: { 200: replayable(CashoutResult), ...replayableErrors(errors) },
      },
    },
    async (req, reply) => {
      const betId = canonicalBetId(req.body.bet_id);
      const result = await s.crashBets.cashout(req.operator!, betId, commandRequest(req), {
        refused: refusedFor(req),
        cashedOut: presentCashedOut,
      });
      return send(reply, result);
    },
  );

  const presentLive = (round: Round): Static<typeof RoundView> => {
    const view = s.engines.crash.present(round) as Static<typeof RoundView>;
    if (round.status === 'running' && round.runningAt !== null) {
      view.multiplier = formatMultiplier(
        liveMultiplier(s.clock.now() - round.runningAt, s.crashGame.crashPoint(round)),
      );
    }
    return view;
  };

  r.get(
    '/rounds/current',
    {
      schema: {
        summary: 'The current Crash round',
        tags: ['Crash'],
        headers: AuthHeaders,
        response: { 200: RoundView, ...errors },
      },
    },
    async (req) => {
      if (isTest(req.operator!)) await s.sandbox.touch(req.operator!, 'crash');
      const round = await s.rounds.latest('crash', scopeOf(req.operator!));
      if (!round) throw new DomainError('ROUND_NOT_FOUND', 'no Crash round has been played yet');
      return presentLive(round);
    },
  );

  r.get(
    '/rounds/:round_number',
    {
      schema: {
        summary: 'A Crash round by number',
        tags: ['Crash'],
        headers: AuthHeaders,
        params: RoundNumberParams,
        response: { 200: RoundView, ...errors },
      },
    },
    async (req) => {
      const number = Number(req.params.round_number);
      const round = await s.rounds.byNumber('crash', number, scopeOf(req.operator!));
      if (!round) throw new DomainError('ROUND_NOT_FOUND', `no Crash round number ${req.params.round_number}`);
      return presentLive(round);
    },
  );

  r.get(
    '/bets',
    {
      schema: {
        summary: "Your Crash bets of a player or a round, newest first (a player's history, a round's bets)",
        description:
          'Give `external_user_id`, `round_number` or both (400 without either). Each bet as `GET /bets/{bet_id}` ' +
          'presents it. Newest first (placed_at descending, then bet_id). `limit`: default 20, maximum 100. ' +
          'While `has_more` is true, pass the last `bet_id` of the page as `starting_after`; a bet_id that is ' +
          'not one of your Crash bets is 400 VALIDATION_FAILED.',
        tags: ['Crash'],
        headers: AuthHeaders,
        querystring: CrashBetListQuery,
        response: { 200: CrashBetList, ...errors },
      },
    },
    async (req) => {
      const q = req.query;
      const operator = req.operator!;
      const page = await s.bets.list({
        operator,
        game: 'crash',
        player: q.external_user_id,
        roundNumber: q.round_number === undefined ? undefined : Number(q.round_number),
        status: q.status,
        limit: q.limit === undefined ? DEFAULT_PAGE_LIMIT : Number(q.limit),
        startingAfter: q.starting_after,
      });
      const livemode = !isTest(operator);
      return { data: page.bets.map((bet) => presentCrashBet(bet, livemode)), has_more: page.hasMore };
    },
  );

  r.get(
    '/bets/:bet_id',
    {
      schema: {
        summary: 'One of your Crash bets',
        tags: ['Crash'],
        headers: AuthHeaders,
        params: BetIdParams,
        response: { 200: CrashBetView, ...errors },
      },
    },
    async (req) => {
      const betId = canonicalBetId(req.params.bet_id);
      const bet = await s.bets.byId(betId);
      if (!bet || bet.operatorId !== req.operator!.id || bet.game !== 'crash') {
        throw new DomainError('BET_NOT_FOUND', `no Crash bet ${betId} for this operator`);
      }
      return presentCrashBet(bet, !isTest(req.operator!));
    },
  );

  r.get(
    '/rounds/stream',
    {
      schema: {
        summary: 'Live feed of Crash rounds and multiplier ticks (Server-Sent Events)',
        description:
          'Events: `round` (the round object on every transition) and `tick` ({round_number, multiplier, elapsed_ms}).',
        tags: ['Crash'],
        headers: AuthHeaders,
        response: { 200: EVENT_STREAM, ...errors },
      },
    },
    async (req, reply) => {
      const terms = operatorStreamTerms(req.operator!.id, s.operators);
      if (!isTest(req.operator!)) return streamFeed(req, reply, s.streams, s.feed, 'crash', terms);
      await s.sandbox.touch(req.operator!, 'crash');
      return streamFeed(req, reply, s.streams, s.sandbox.feedOf(req.operator!.id), 'crash', terms);
    },
  );
}
