import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { isDomainError } from '../../errors/codes';
import { presentRound } from '../../games/round-presenter';
import { roundRepository } from '../../games/engine/round-repository';
import type { AppServices } from '../../services';
import type { PlayerSession } from '../../sessions/session-service';
import { SURFACE_B_STATUS } from '../error-maps';
import { streamFeed } from '../sse';
import { errorHandler, type Surface } from '../surface';
import { sandboxOf } from '../../sandbox/sandbox-service';
import { newNonce, playerPageHeaders, playerRefusal } from '../../dashboard/player/player-ui-routes';
import { stockRacePlayerPage } from '../../dashboard/player/player-view';

const TokenQuery = Type.Object({ token: Type.Optional(Type.String({ maxLength: 200 })) }, { additionalProperties: true });

const playerSurface: Surface = {
  name: 'B',
  headers: { apiKey: 'x-operator-key', signature: 'x-signature', timestamp: 'x-timestamp' },
  status: SURFACE_B_STATUS,
  errorBody: (code, message, traceId) => (code === 'INTERNAL' ? { error: 'INTERNAL', trace_id: traceId } : { error: code, message }),
};

/**
 * The player page a launch_url opens, and its live feed. A link whose session is unknown or has
 * expired opens nothing: 404 / 410 with a short explanation, never the game. The page itself (and
 * its no-store, no-referrer, nonce-CSP headers) comes from src/dashboard/player/.
 */
export async function playerRoutes(app: FastifyInstance, s: AppServices): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  // Every use of a session reports where it came from: one session used from several places at
  // once raises a compliance flag. An observation only: it never blocks the player.
  const seen = (
    session: PlayerSession,
    place: string,
    log: { warn(o: object, m: string): void },
    sandbox: string | null,
  ): void => {
    // Sandbox sessions are test data: they raise no compliance flags.
    if (sandbox !== null) return;
    void s.complianceFlags
      .sessionSeen(s.db, { operatorId: session.operatorId, sessionId: session.id, player: session.playerRef, place, now: s.clock.now() })
      .catch((err: unknown) => log.warn({ err }, 'compliance session check failed'));
  };
  app.setErrorHandler(errorHandler(playerSurface));

  r.get('/play', { schema: { hide: true, querystring: TokenQuery } }, async (req, reply) => {
    let session: PlayerSession;
    try {
      session = await s.sessions.byToken(req.query.token, s.db.reads);
    } catch (error) {
      if (!isDomainError(error)) throw error;
      // The refusal links back to the operator when the (expired) session is known.
      const nonce = newNonce();
      playerPageHeaders(reply, nonce);
      const refusal = await playerRefusal(s, req.query.token, error.code, nonce);
      return reply.status(refusal.status).type('text/html; charset=utf-8').send(refusal.html);
    }
    const sandbox = await sandboxOf(s, session);
    seen(session, req.ip, req.log, sandbox);
    const latest = await roundRepository.latest(s.db.reads, 'stock_race', sandbox);
    const round = latest ? { ...presentRound(latest), symbols: s.stockRaceGame.symbolsOf(latest) } : null;
    const nonce = newNonce();
    playerPageHeaders(reply, nonce);
    const feedPath = `/play/feed?token=${encodeURIComponent(req.query.token!)}`;
    const page = stockRacePlayerPage({ session, round, feedPath, nonce, token: req.query.token!, serverNow: s.clock.now() });
    return reply.type('text/html; charset=utf-8').send(page);
  });

  r.get('/play/feed', { schema: { hide: true, querystring: TokenQuery } }, async (req, reply) => {
    const session = await s.sessions.byToken(req.query.token, s.db.reads);
    const sandbox = await sandboxOf(s, session);
    seen(session, req.ip, req.log, sandbox);
    await streamFeed(req, reply, sandbox === null ? s.feed : s.sandbox.feedOf(sandbox), 'stock_race', session.id);
    // The stream ends with the session; the page's EventSource reconnect is then refused.
    const left = session.expiresAt - s.clock.now();
    const timer = setTimeout(() => reply.raw.end(), Math.min(Math.max(0, left), 2 ** 31 - 1));
    timer.unref();
    reply.raw.on('close', () => clearTimeout(timer));
  });
}

