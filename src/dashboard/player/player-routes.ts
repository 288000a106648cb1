import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { randomBytes } from 'node:crypto';
import { Type } from 'typebox';
import { type Bet, resultOf, stockRaceBetOf } from '../../bets/bet';
import { isDomainError, type ErrorCode } from '../../errors/codes';
import { formatMultiplier } from '../../games/crash/multiplier';
import { crashOutcomeOf, type Game } from '../../games/engine/round';
import { presentRound } from '../../games/round-presenter';
import { hideFromOpenApi } from '../../http/openapi';
import { streamFeed } from '../../http/sse';
import { STREAM_ALLOWANCE } from '../../games/engine/live-streams';
import { currencyExponent, formatMinor } from '../../money/currency';
import type { AppServices } from '../../services';
import type { PlayerSession } from '../../sessions/session';
import { PLAYER_ASSETS, serveAssets } from '../assets';
import { crashPlayerPage, playerRefusalPage, stockRacePlayerPage, verifyPlayerPage } from './player-view';

type TokenReq = FastifyRequest<{ Querystring: { token?: string | string[] } }>;
type VerifyReq = FastifyRequest<{ Querystring: { token?: string | string[]; round?: string } }>;

// A mangled link (a token cut, lengthened or given twice) is a token that opens nothing: the 404 page, as
// for any unknown token, not a 400 about the query. tokenOf() reads the one well-formed value, if any.
const TokenQuery = Type.Object(
  { token: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())])) },
  { additionalProperties: true },
);

/** The query's token when it was given once; byToken refuses anything but launch()'s shape before a lookup. */
const tokenOf = (query: { token?: string | string[] }): string | undefined =>
  typeof query.token === 'string' ? query.token : undefined;

/** Player pages read on the store's read-only path: opening one never waits behind a writer. */
const READ_ONLY = { readOnly: true } as const;

/** The player-page response headers: the token is a bearer credential in the URL, so no caching and no Referer. */
function playerPageHeaders(reply: FastifyReply, nonce: string): void {
  reply.header('cache-control', 'no-store');
  reply.header('referrer-policy', 'no-referrer');
  reply.header('x-content-type-options', 'nosniff');
  reply.header(
    'content-security-policy',
    `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; img-src 'self'; ` +
      "connect-src 'self'; base-uri 'none'; form-action 'none'",
  );
}

const newNonce = (): string => randomBytes(16).toString('base64');

export interface SessionBetJson {
  bet_id: string;
  round_id: string;
  round_number: number;
  selected_stocks: string[];
  stake: string;
  currency: string;
  status: string;
  payout: string | null;
  placed_at: number;
  settled_at: number | null;
}

function presentSessionBet(bet: Bet): SessionBetJson {
  const b = stockRaceBetOf(bet);
  const exp = currencyExponent(b.currency);
  const result = resultOf(b);
  return {
    bet_id: b.id,
    round_id: b.roundId,
    round_number: b.roundNumber,
    selected_stocks: b.selections ?? [],
    stake: formatMinor(b.amount, exp),
    currency: b.currency,
    status: b.status,
    payout: result.payout === null ? null : formatMinor(result.payout, exp),
    placed_at: b.placedAt,
    settled_at: result.settledAt,
  };
}

/**
 * The player page a launch_url opens (Stock Race at /play, Crash at /play/crash, the round checker
 * at /play/verify), its live feeds, the session's bets and the page's static files. Everything but
 * the files opens only with a live session token: a link whose session is unknown or has expired
 * opens nothing (404 / 410 with a short explanation, never the game). Other errors take Surface B's
 * shape from the server's root handler (every path outside /api/public/ gets it).
 */
export async function playerRoutes(app: FastifyInstance, services: AppServices): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  hideFromOpenApi(app);

  serveAssets(app, '/play/assets', PLAYER_ASSETS);

  // Every use of a session reports where it came from: one session used from several places at
  // once raises a compliance flag. An observation only: it never blocks the player.
  const seen = (session: PlayerSession, req: FastifyRequest, sandbox: string | null, game: Game | null): void => {
    // Sandbox sessions are test data: they raise no compliance flags.
    if (sandbox !== null) return;
    void services.complianceFlags
      .sessionSeen({
        operatorId: session.operatorId,
        sessionId: session.id,
        player: session.playerRef,
        place: req.ip,
        now: services.clock.now(),
        game,
      })
      .catch((err: unknown) => req.log.warn({ err }, 'compliance session check failed'));
  };

  /**
   * The page for a token that opens no game: 404 for an unknown one, 410 for an expired one. An
   * expired session is still on file, so its page links back to the operator's return_url.
   */
  const refuse = async (reply: FastifyReply, token: string | undefined, code: ErrorCode): Promise<FastifyReply> => {
    const nonce = newNonce();
    const expired = code === 'SESSION_EXPIRED';
    const html = expired
      ? playerRefusalPage({
          title: 'Session expired',
          message: 'This game session has ended. Go back to the operator site to start a new one.',
          returnUrl: token ? await services.sessions.returnUrlOf(token) : null,
          nonce,
        })
      : playerRefusalPage({
          title: 'Session not found',
          message: 'This link does not open a game session.',
          returnUrl: null,
          nonce,
        });
    playerPageHeaders(reply, nonce);
    return reply
      .status(expired ? 410 : 404)
      .type('text/html; charset=utf-8')
      .send(html);
  };

  /** The session a page's token opens, or null once the refusal page has been sent. */
  const sessionForPage = async (
    reply: FastifyReply,
    token: string | undefined,
    options?: typeof READ_ONLY,
  ): Promise<PlayerSession | null> => {
    try {
      return await services.sessions.byToken(token, options);
    } catch (error) {
      if (!isDomainError(error)) throw error;
      await refuse(reply, token, error.code);
      return null;
    }
  };

  /** Streams a game's live feed to the session until it expires (the page's reconnect is then refused). */
  const streamUntilExpiry = async (
    req: FastifyRequest,
    reply: FastifyReply,
    session: PlayerSession,
    sandbox: string | null,
    game: 'crash' | 'stock_race',
  ): Promise<void> => {
    const feed = sandbox === null ? services.feed : services.sandbox.feedOf(sandbox);
    await streamFeed(req, reply, services.streams, feed, game, {
      holder: { key: `player-session:${session.id}`, max: STREAM_ALLOWANCE.playerSession, name: 'session' },
      endsInMs: session.expiresAt - services.clock.now(),
      // The operator's players watch only while the operator is enabled.
      stillAllowed: () => services.operators.isActive(session.operatorId),
    });
  };

  r.get('/play', { schema: { querystring: TokenQuery } }, async (req, reply) => {
    const token = tokenOf(req.query);
    const session = await sessionForPage(reply, token, READ_ONLY);
    if (!session) return reply;
    const sandbox = await services.sandbox.scopeOfSession(session);
    seen(session, req, sandbox, 'stock_race');
    const latest = await services.rounds.latest('stock_race', sandbox, READ_ONLY);
    const round = latest ? { ...presentRound(latest), symbols: services.stockRaceGame.symbolsOf(latest) } : null;
    const nonce = newNonce();
    playerPageHeaders(reply, nonce);
    const feedPath = `/play/feed?token=${encodeURIComponent(token!)}`;
    const page = stockRacePlayerPage({
      session,
      round,
      feedPath,
      nonce,
      token: token!,
      serverNow: services.clock.now(),
    });
    return reply.type('text/html; charset=utf-8').send(page);
  });

  r.get('/play/feed', { schema: { querystring: TokenQuery } }, async (req, reply) => {
    const session = await services.sessions.byToken(tokenOf(req.query), READ_ONLY);
    const sandbox = await services.sandbox.scopeOfSession(session);
    seen(session, req, sandbox, 'stock_race');
    await streamUntilExpiry(req, reply, session, sandbox, 'stock_race');
  });

  app.get('/play/bets', { schema: { querystring: TokenQuery } }, async (req: TokenReq, reply) => {
    const session = await services.sessions.byToken(tokenOf(req.query), READ_ONLY);
    // The history is the player's as much as a page is: reading it from a second place is a second place.
    seen(session, req, await services.sandbox.scopeOfSession(session), 'stock_race');
    reply.header('cache-control', 'no-store');
    return { bets: (await services.bets.ofSession(session.id, 50)).map(presentSessionBet) };
  });

  app.get('/play/crash', { schema: { querystring: TokenQuery } }, async (req: TokenReq, reply) => {
    const token = tokenOf(req.query);
    const session = await sessionForPage(reply, token, READ_ONLY);
    if (!session) return reply;
    const sandbox = await services.sandbox.scopeOfSession(session);
    // Every page a token opens is a use of the session: a second place watching Crash is a second place.
    seen(session, req, sandbox, 'crash');
    const latest = await services.rounds.latest('crash', sandbox, READ_ONLY);
    const closed = await services.rounds.recentlyClosed('crash', 12, sandbox, READ_ONLY);
    const nonce = newNonce();
    playerPageHeaders(reply, nonce);
    const html = crashPlayerPage({
      session,
      token: token!,
      nonce,
      serverNow: services.clock.now(),
      round: latest ? presentRound(latest) : null,
      recent: closed.map((c) => ({
        round_number: c.roundNumber,
        crash_point: formatMultiplier(crashOutcomeOf(c).crash_point),
      })),
    });
    return reply.type('text/html; charset=utf-8').send(html);
  });

  app.get('/play/verify', { schema: { querystring: TokenQuery } }, async (req: VerifyReq, reply) => {
    const token = tokenOf(req.query);
    const session = await sessionForPage(reply, token, READ_ONLY);
    if (!session) return reply;
    seen(session, req, await services.sandbox.scopeOfSession(session), null);
    // Only live rounds: sandbox ones are test data, outside the public fairness record.
    const recent = await services.rounds.lastClosed(12, null, READ_ONLY);
    const asked = req.query.round;
    const roundId = typeof asked === 'string' && /^[\x21-\x7e]{1,100}$/.test(asked) ? asked : null;
    const nonce = newNonce();
    playerPageHeaders(reply, nonce);
    const html = verifyPlayerPage({
      session,
      token: token!,
      nonce,
      serverNow: services.clock.now(),
      roundId,
      recent: recent.map((x) => ({ round_id: x.id, game: x.game, round_number: x.roundNumber })),
    });
    return reply.type('text/html; charset=utf-8').send(html);
  });

  app.get('/play/crash/feed', { schema: { querystring: TokenQuery } }, async (req: TokenReq, reply) => {
    const session = await services.sessions.byToken(tokenOf(req.query), READ_ONLY);
    const sandbox = await services.sandbox.scopeOfSession(session);
    seen(session, req, sandbox, 'crash');
    await streamUntilExpiry(req, reply, session, sandbox, 'crash');
  });
}
