import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type, type Static } from 'typebox';
import { resultOf, type StockRaceBet } from '../../bets/bet';
import { presentAmount } from '../../bets/bet-events';
import { DomainError } from '../../errors/codes';
import type { Operator } from '../../operators/operator';
import type { Round } from '../../games/engine/round';
import type { AppServices } from '../../services';
import { presentSettlement, type Settlement } from '../../wallet/settlements';
import { SURFACE_B_STATUS } from '../error-maps';
import { keyedPost, refusalIn, replayable, replayableErrors, sendAnswer } from '../keyed-write';
import { withRetryAfter } from '../openapi';
import { keyedHeadersFor } from '../webhooks/schemas';
import { EVENT_STREAM, operatorStreamTerms, streamFeed } from '../sse';
import { guardSurface } from '../surface/guard-surface';
import type { Surface } from '../surface/surface';
import {
  AuthHeadersB,
  BetIdParamsB,
  ErrorB,
  FaultB,
  LaunchBody,
  LaunchResult,
  ReserveBody,
  ReservedBetView,
  RoundIdParams,
  SettlementList,
  SettlementQuery,
  SettlementView,
  StockRaceBetList,
  StockRaceBetListQuery,
  StockRaceBetView,
  StockRaceRoundView,
} from './schemas';

export const surfaceB: Surface = {
  name: 'B',
  headers: { apiKey: 'x-operator-key', signature: 'x-signature', timestamp: 'x-timestamp' },
  status: SURFACE_B_STATUS,
  // A fault (500) carries only the code and a trace id: nothing about it leaves the service. Every other
  // 5xx (503: retry shortly) keeps its message, and carries the trace id too.
  errorBody: (code, message, traceId) => {
    if (code === 'INTERNAL') return { error: 'INTERNAL', trace_id: traceId };
    return SURFACE_B_STATUS[code] >= 500 ? { error: code, message, trace_id: traceId } : { error: code, message };
  },
};

const errors = withRetryAfter({
  400: ErrorB,
  401: ErrorB,
  403: ErrorB,
  404: ErrorB,
  409: ErrorB,
  413: ErrorB,
  415: ErrorB,
  429: ErrorB,
  500: FaultB,
  // Shared state (store, Redis) unreachable, or the instance shutting down: retry after Retry-After.
  503: FaultB,
});

export function presentStockRaceBet(
  bet: StockRaceBet,
  settlement: Settlement | undefined,
  livemode: boolean,
): Static<typeof StockRaceBetView> {
  const result = resultOf(bet);
  return {
    livemode,
    bet_id: bet.id,
    round_id: bet.roundId,
    round_number: bet.roundNumber,
    session_id: bet.sessionId,
    player_ref: bet.player,
    status: bet.status,
    stake: presentAmount(bet, bet.amount),
    currency: bet.currency,
    selected_stocks: bet.selections,
    payout: result.payout === null ? null : presentAmount(bet, result.payout),
    placed_at: bet.placedAt,
    settled_at: result.settledAt,
    settlement: settlement
      ? {
          status: settlement.status,
          attempts: settlement.attempts,
          next_attempt_at: settlement.nextAttemptAt,
          delivered_at: settlement.deliveredAt,
        }
      : null,
  };
}

/** Bets per page of `GET /v1/bets` when the request does not say. */
const DEFAULT_PAGE_LIMIT = 20;

/** Surface B, the seamless-wallet operator API: Stock Race. Thin routes: schema → authenticate → domain → present. */
export async function surfaceBRoutes(app: FastifyInstance, s: AppServices): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  guardSurface(app, surfaceB, s, { ownsNotFound: true });
  // Test-mode operators play in their own sandbox rounds and raise no compliance flags.
  const isTest = (operator: Operator): boolean => operator.mode === 'test';
  const scopeOf = (operator: Operator): string | null => (isTest(operator) ? operator.id : null);
  const keyed = { idempotency: s.idempotency, surface: surfaceB };
  const launchHeaders = keyedHeadersFor(surfaceB);

  const presentLive = (round: Round): Static<typeof StockRaceRoundView> => {
    const view = s.engines.stockRace.present(round) as Static<typeof StockRaceRoundView>;
    const frame = s.stockRaceGame.frame(round, s.clock.now());
    if (frame) Object.assign(view, { progress_permille: frame.progress_permille, stocks: frame.stocks });
    return view;
  };

  r.post(
    '/sessions/launch',
    {
      schema: {
        summary: 'Create a play session for a player logged in on the operator side',
        description:
          'With an Idempotency-Key, a retry signed afresh gets the same session and launch URL ' +
          '(stored sealed: the URL holds the player token).',
        tags: ['Stock Race'],
        headers: launchHeaders,
        body: LaunchBody,
        response: { 200: replayable(LaunchResult), ...replayableErrors(errors) },
      },
    },
    async (req, reply) =>
      keyedPost(
        req,
        reply,
        keyed,
        { status: 200, sealed: true },
        (inTx) =>
          s.sessions.launch(
            req.operator!,
            { playerRef: req.body.player_ref, currency: req.body.currency, returnUrl: req.body.return_url },
            inTx,
          ),
        ({ session, launchUrl }) => ({ session_id: session.id, launch_url: launchUrl, expires_at: session.expiresAt }),
      ),
  );

  r.post(
    '/bets/reserve',
    {
      // The idempotency key is in the signed body: the same signature is always the same key.
      config: { replay: 'signed-body' },
      schema: {
        summary: 'Record a Stock Race bet whose stake the operator has reserved in its wallet',
        description:
          'Idempotent by the body field `idempotency_key`: ' +
          'the same key with the same body replays the stored response with `idempotent-replay: true`; ' +
          'the same key with another body is 409 IDEMPOTENCY_KEY_REUSED.',
        tags: ['Stock Race'],
        headers: AuthHeadersB,
        body: ReserveBody,
        response: { 200: replayable(ReservedBetView), ...replayableErrors(errors) },
      },
    },
    async (req, reply) => {
      const body = req.body;
      const operator = req.operator!;
      const result = await s.stockRaceBets.reserve(
        operator,
        { sessionId: body.session_id, roundId: body.round_id, selectedStocks: body.selected_stocks, stake: body.stake },
        { key: body.idempotency_key, route: 'POST /v1/bets/reserve', body },
        {
          refused: refusalIn(surfaceB, req),
          reserved: (bet, potentialPayout): Static<typeof ReservedBetView> => ({
            bet_id: bet.id,
            round_id: bet.roundId,
            round_number: bet.roundNumber,
            session_id: bet.sessionId,
            player_ref: bet.player,
            status: bet.status,
            stake: presentAmount(bet, bet.amount),
            currency: bet.currency,
            selected_stocks: bet.selections,
            potential_payout: presentAmount(bet, potentialPayout),
            placed_at: bet.placedAt,
            ...(isTest(operator) ? { livemode: false } : {}),
          }),
        },
      );
      return sendAnswer(reply, result) as never;
    },
  );

  r.get(
    '/rounds/current',
    {
      schema: {
        summary: 'The current Stock Race round',
        tags: ['Stock Race'],
        headers: AuthHeadersB,
        response: { 200: StockRaceRoundView, ...errors },
      },
    },
    async (req) => {
      if (isTest(req.operator!)) await s.sandbox.touch(req.operator!, 'stock_race');
      const round = await s.rounds.latest('stock_race', scopeOf(req.operator!));
      if (!round) throw new DomainError('ROUND_NOT_FOUND', 'no Stock Race round has been played yet');
      return presentLive(round);
    },
  );

  r.get(
    '/rounds/stream',
    {
      schema: {
        summary: 'Live feed of Stock Race rounds and race frames (Server-Sent Events)',
        description:
          'Events: `round` (the round object on every transition) and `tick` ' +
          '({round_id, round_number, at, progress_permille, elapsed_ms, stocks[{symbol, pct}]}).',
        tags: ['Stock Race'],
        headers: AuthHeadersB,
        response: { 200: EVENT_STREAM, ...errors },
      },
    },
    async (req, reply) => {
      const terms = operatorStreamTerms(req.operator!.id, s.operators);
      if (!isTest(req.operator!)) return streamFeed(req, reply, s.streams, s.feed, 'stock_race', terms);
      await s.sandbox.touch(req.operator!, 'stock_race');
      return streamFeed(req, reply, s.streams, s.sandbox.feedOf(req.operator!.id), 'stock_race', terms);
    },
  );

  r.get(
    '/rounds/:round_id',
    {
      schema: {
        summary: 'A Stock Race round by id',
        tags: ['Stock Race'],
        headers: AuthHeadersB,
        params: RoundIdParams,
        response: { 200: StockRaceRoundView, ...errors },
      },
    },
    async (req) => {
      const round = await s.rounds.byId(req.params.round_id);
      if (!round || round.game !== 'stock_race' || round.operatorId !== scopeOf(req.operator!)) {
        throw new DomainError('ROUND_NOT_FOUND', `no Stock Race round ${req.params.round_id}`);
      }
      return presentLive(round);
    },
  );

  r.get(
    '/bets',
    {
      schema: {
        summary: "Your Stock Race bets of a player or a round, newest first (a player's history, a round's bets)",
        description:
          'Give `player_ref`, `round_id` or both (400 without either). Each bet as `GET /v1/bets/{bet_id}` ' +
          'presents it, with its `settlement`. Newest first (placed_at descending, then bet_id). `limit`: ' +
          'default 20, maximum 100. While `has_more` is true, pass the last `bet_id` of the page as ' +
          '`starting_after`; a bet_id that is not one of your Stock Race bets is 400 VALIDATION_FAILED.',
        tags: ['Stock Race'],
        headers: AuthHeadersB,
        querystring: StockRaceBetListQuery,
        response: { 200: StockRaceBetList, ...errors },
      },
    },
    async (req) => {
      const q = req.query;
      const operator = req.operator!;
      const page = await s.bets.list({
        operator,
        game: 'stock_race',
        player: q.player_ref,
        roundId: q.round_id,
        status: q.status,
        limit: q.limit === undefined ? DEFAULT_PAGE_LIMIT : Number(q.limit),
        startingAfter: q.starting_after,
      });
      // The page's settle calls in one query, each presented as the single bet read presents it.
      const settlements = await s.settlements.byBets(page.bets.map((bet) => bet.id));
      const livemode = !isTest(operator);
      return {
        data: page.bets.map((bet) => presentStockRaceBet(bet, settlements.get(bet.id), livemode)),
        has_more: page.hasMore,
      };
    },
  );

  r.get(
    '/bets/:bet_id',
    {
      schema: {
        summary: 'One of your Stock Race bets',
        tags: ['Stock Race'],
        headers: AuthHeadersB,
        params: BetIdParamsB,
        response: { 200: StockRaceBetView, ...errors },
      },
    },
    async (req) => {
      // A UUID is case-insensitive on input (RFC 9562); bet ids are stored in lower case.
      const bet = await s.bets.byId(req.params.bet_id.toLowerCase());
      if (!bet || bet.operatorId !== req.operator!.id || bet.game !== 'stock_race') {
        throw new DomainError('BET_NOT_FOUND', `no Stock Race bet ${req.params.bet_id} for this operator`);
      }
      return presentStockRaceBet(bet, await s.settlements.byBet(bet.id), !isTest(req.operator!));
    },
  );

  r.get(
    '/settlements',
    {
      schema: {
        summary: 'Settle calls to your wallet, oldest first (e.g. ?status=pending: not yet confirmed by your wallet)',
        description:
          'Oldest first (created_at, then bet_id). `limit`: default 100, maximum 1000. While `has_more` is true, ' +
          'pass the last `bet_id` of the page as `starting_after`; a bet_id that is not one of your settlements is ' +
          '400 VALIDATION_FAILED.',
        tags: ['Stock Race'],
        headers: AuthHeadersB,
        querystring: SettlementQuery,
        response: { 200: SettlementList, ...errors },
      },
    },
    async (req) => {
      const limit = req.query.limit === undefined ? 100 : Number(req.query.limit);
      if (limit < 1 || limit > 1000)
        throw new DomainError('VALIDATION_FAILED', 'querystring field "limit" must be an integer from 1 to 1000');
      const page = await s.settlements.page({
        operatorId: req.operator!.id,
        status: req.query.status,
        startingAfter: req.query.starting_after,
        limit,
      });
      return {
        settlements: page.settlements.map((x) => presentSettlement(x) as Static<typeof SettlementView>),
        has_more: page.hasMore,
      };
    },
  );
}
