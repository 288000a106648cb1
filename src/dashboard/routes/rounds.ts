import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { BetStatus } from '../../bets/bet';
import { DomainError } from '../../errors/codes';
import { GAMES, type Game } from '../../games/engine/round';
import { presentRound } from '../../games/round-presenter';
import type { AppServices } from '../../services';
import { ctx } from '../context';
import { field, notice, queryField, type FormBody } from '../forms';
import { betPage, settlementsPage } from '../views/bets';
import { BET_STATUSES, betsPage, roundsPage } from '../views/rounds';

type QueryReq = FastifyRequest<{ Querystring: Record<string, unknown> }>;
const ROUNDS_SHOWN = 50;
const BETS_SHOWN = 200;
/** The pending settlements page lists the oldest this many and says how many there are in all. */
const SETTLEMENTS_SHOWN = 500;

function gameFilter(raw: string | undefined): Game | undefined {
  if (raw === undefined) return undefined;
  if (!(GAMES as readonly string[]).includes(raw))
    throw new DomainError('VALIDATION_FAILED', 'game must be crash or stock_race');
  return raw as Game;
}

/** Rounds with their seeds, bets with their audit trails, and the wallet settlements still pending. */
export async function roundRoutes(app: FastifyInstance, services: AppServices): Promise<void> {
  app.get('/rounds', async (req: QueryReq, reply) => {
    const c = ctx(req);
    const game = gameFilter(queryField(req.query, 'game'));
    const scope = c.operator.mode === 'test' ? c.operator.id : null;
    const rounds = await services.rounds.recent(game ?? null, ROUNDS_SHOWN, scope);
    const bets = await services.bets.countsByRound(
      c.operator.id,
      rounds.map((r) => r.id),
    );
    return reply
      .type('text/html; charset=utf-8')
      .send(roundsPage({ user: c.user, rounds: rounds.map(presentRound), bets, game }));
  });

  app.get('/bets', async (req: QueryReq, reply) => {
    const c = ctx(req);
    const filters = {
      player: queryField(req.query, 'player', 120),
      round: queryField(req.query, 'round', 100),
      status: queryField(req.query, 'status', 20),
      game: queryField(req.query, 'game', 20),
    };
    if (filters.status && !(BET_STATUSES as string[]).includes(filters.status)) {
      throw new DomainError('VALIDATION_FAILED', `status must be one of ${BET_STATUSES.join(', ')}`);
    }
    const bets = await services.bets.find({
      operatorId: c.operator.id,
      player: filters.player,
      roundId: filters.round,
      status: filters.status as BetStatus | undefined,
      game: gameFilter(filters.game),
      limit: BETS_SHOWN,
    });
    return reply.type('text/html; charset=utf-8').send(betsPage({ user: c.user, bets, filters, limit: BETS_SHOWN }));
  });

  app.get(
    '/bets/:id',
    async (req: FastifyRequest<{ Params: { id: string }; Querystring: Record<string, unknown> }>, reply) => {
      const c = ctx(req);
      const bet = await services.bets.byId(req.params.id);
      if (!bet || bet.operatorId !== c.operator.id)
        throw new DomainError('BET_NOT_FOUND', `no bet ${req.params.id} for this operator`);
      const round = await services.rounds.byId(bet.roundId);
      const settlement = (await services.settlements.byBet(bet.id)) ?? null;
      const attempts = settlement ? await services.settlements.attempts(bet.id) : [];
      return reply.type('text/html; charset=utf-8').send(
        betPage({
          user: c.user,
          bet,
          round: round ? presentRound(round) : null,
          settlement,
          attempts,
          notice: notice(req.query.notice),
        }),
      );
    },
  );

  app.get('/settlements', async (req: QueryReq, reply) => {
    const c = ctx(req);
    const pending = await services.settlements.list({
      operatorId: c.operator.id,
      status: 'pending',
      limit: SETTLEMENTS_SHOWN,
    });
    // Only a full page can hide more: the count is read then, so the usual short list costs no extra query.
    const total =
      pending.length < SETTLEMENTS_SHOWN ? pending.length : await services.settlements.pendingCount(c.operator.id);
    const payouts = await services.reports.settlementPayouts(
      c.operator.id,
      pending.map((p) => p.betId),
    );
    return reply
      .type('text/html; charset=utf-8')
      .send(settlementsPage({ user: c.user, pending, total, payouts, notice: notice(req.query.notice) }));
  });

  // The same rule as the admin CLI's `settlements retry`: due now, same idempotency_key; a confirmed one is refused.
  app.post('/settlements/:bet/retry', async (req: FastifyRequest<{ Params: { bet: string } }>, reply) => {
    const c = ctx(req);
    const settlement = await services.settlements.retry(c.operator.id, req.params.bet);
    const back = field(req.body as FormBody, 'back');
    const target = back === `/dashboard/bets/${settlement.betId}` ? back : '/dashboard/settlements';
    return reply.redirect(`${target}?notice=settlement-retry`, 303);
  });
}
