import type { FastifyInstance, FastifyRequest } from 'fastify';
import { DomainError } from '../../errors/codes';
import { streamFeed } from '../../http/sse';
import { STREAM_ALLOWANCE } from '../../games/engine/live-streams';
import { GAMES, type Game } from '../../games/engine/round';
import { presentRound } from '../../games/round-presenter';
import type { AppServices } from '../../services';
import { ctx } from '../context';
import { livePage } from '../views/live';

/** Home: the live games, the charts, and what needs attention. */
export async function liveRoutes(app: FastifyInstance, services: AppServices): Promise<void> {
  app.get('/', async (req, reply) => {
    const c = ctx(req);
    const scope = c.operator.mode === 'test' ? c.operator.id : null;
    const [crash, race] = await Promise.all([
      services.rounds.latest('crash', scope),
      services.rounds.latest('stock_race', scope),
    ]);
    const html = livePage({
      user: c.user,
      overview: await services.reports.overview(c.operator.id),
      stats: await services.reports.liveStats(c.operator),
      crash: crash ? presentRound(crash) : null,
      race: race ? { ...presentRound(race), symbols: services.stockRaceGame.symbolsOf(race) } : null,
      serverNow: services.clock.now(),
    });
    return reply.type('text/html; charset=utf-8').send(html);
  });

  app.get('/api/stats', async (req) => services.reports.liveStats(ctx(req).operator));

  // The same feed partners get on the API surfaces, authenticated by the dashboard session instead.
  app.get('/feed/:game', async (req: FastifyRequest<{ Params: { game: string } }>, reply) => {
    const game = req.params.game as Game;
    if (!GAMES.includes(game)) throw new DomainError('NOT_FOUND', `no live feed for "${req.params.game}"`);
    const { operator, session, stillSignedIn } = ctx(req);
    const feed = operator.mode === 'test' ? services.sandbox.feedOf(operator.id) : services.feed;
    // A signed-out or expired session, or a disabled operator, must not keep watching.
    await streamFeed(req, reply, services.streams, feed, game, {
      holder: { key: `dashboard-user:${session.user.id}`, max: STREAM_ALLOWANCE.dashboardUser, name: 'dashboard user' },
      endsInMs: session.expiresAt - services.clock.now(),
      stillAllowed: stillSignedIn,
    });
  });
}
