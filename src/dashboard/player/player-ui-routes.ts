import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { randomBytes } from 'node:crypto';
import { resultOf, type StockRaceBet, stockRaceBetOf } from '../../bets/bet';
import { toBet } from '../../bets/bet-repository';
import { formatMultiplier } from '../../games/crash/multiplier';
import { isDomainError, type ErrorCode } from '../../errors/codes';
import { SURFACE_B_STATUS } from '../../http/error-maps';
import { hideFromOpenApi } from '../../http/openapi';
import { streamFeed } from '../../http/sse';
import { surfaceB } from '../../http/surface-b/routes';
import { errorHandler } from '../../http/surface';
import { currencyExponent, formatMinor } from '../../money/currency';
import { parseCrashOutcome } from '../../games/engine/round';
import { presentRound } from '../../games/round-presenter';
import { roundRepository } from '../../games/engine/round-repository';
import { sandboxOf } from '../../sandbox/sandbox-service';
import type { AppServices } from '../../services';
import { hashToken, type PlayerSession } from '../../sessions/session-service';
import type { SqlExecutor } from '../../store/database';
import { PLAYER_ASSETS, serveAssets } from '../assets';
import { crashPlayerPage, playerRefusalPage, verifyPlayerPage, type VerifiableRound } from './player-view';

type TokenReq = FastifyRequest<{ Querystring: { token?: string } }>;

/** The player-page response headers: the token is a bearer credential in the URL, so no caching and no Referer. */
export function playerPageHeaders(reply: FastifyReply, nonce: string): void {
  reply.header('cache-control', 'no-store');
  reply.header('referrer-policy', 'no-referrer');
  reply.header('x-content-type-options', 'nosniff');
  reply.header(
    'content-security-policy',
    `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'`,
  );
}

export const newNonce = (): string => randomBytes(16).toString('base64');

/**
 * The page for a token that opens no game: 404 for an unknown one, 410 for an expired one. An
 * expired session is still on file, so its page links back to the operator's return_url.
 */
export async function playerRefusal(s: AppServices, token: string | undefined, code: ErrorCode, nonce: string): Promise<{ status: number; html: string }> {
  const expired = code === 'SESSION_EXPIRED';
  const row =
    expired && token
      ? await s.db.reads.get<{ return_url: string }>('SELECT return_url FROM sessions WHERE token_hash = ?', [
          hashToken(token),
        ])
      : undefined;
  const html = expired
    ? playerRefusalPage({
        title: 'Session expired',
        message: 'This game session has ended. Go back to the operator site to start a new one.',
        returnUrl: row?.return_url ?? null,
        nonce,
      })
    : playerRefusalPage({ title: 'Session not found', message: 'This link does not open a game session.', returnUrl: null, nonce });
  return { status: expired ? 410 : 404, html };
}

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

function presentSessionBet(b: StockRaceBet): SessionBetJson {
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

export async function sessionBets(db: SqlExecutor, session: PlayerSession, limit = 50): Promise<SessionBetJson[]> {
  const rows = await db.all<Parameters<typeof toBet>[0]>('SELECT * FROM bets WHERE session_id = ? ORDER BY placed_at DESC, id LIMIT ?', [session.id, limit]);
  return rows.map((r) => presentSessionBet(stockRaceBetOf(toBet(r))));
}

async function recentCrashPoints(
  db: SqlExecutor,
  limit: number,
  sandbox: string | null,
): Promise<{ round_number: number; crash_point: number }[]> {
  const rows = await db.all<{ round_number: number; outcome: string }>(
    `SELECT round_number, outcome FROM rounds WHERE game = 'crash' AND status = 'closed'
     AND ${sandbox === null ? 'operator_id IS NULL' : 'operator_id = ?'} ORDER BY round_number DESC LIMIT ?`,
    sandbox === null ? [limit] : [sandbox, limit],
  );
  return rows.map((r) => ({ round_number: Number(r.round_number), crash_point: formatMultiplier(parseCrashOutcome(r.outcome).crash_point) }));
}

/**
 * What the player page needs beyond /play itself: its static files, the session's bets, and the
 * Crash view with its feed. Every route but the assets opens only with a live session token.
 */
export async function playerUiRoutes(app: FastifyInstance, s: AppServices): Promise<void> {
  hideFromOpenApi(app);
  // Surface B's error shape and classification: Fastify's own 4xx refusals stay 4xx.
  app.setErrorHandler(errorHandler(surfaceB));

  serveAssets(app, '/play/assets', PLAYER_ASSETS);

  app.get('/play/bets', async (req: TokenReq, reply) => {
    const session = await s.sessions.byToken(req.query.token, s.db.reads);
    reply.header('cache-control', 'no-store');
    return { bets: await sessionBets(s.db.reads, session) };
  });

  app.get('/play/crash', async (req: TokenReq, reply) => {
    const nonce = newNonce();
    let session: PlayerSession;
    try {
      session = await s.sessions.byToken(req.query.token, s.db.reads);
    } catch (error) {
      if (!isDomainError(error)) throw error;
      playerPageHeaders(reply, nonce);
      const refusal = await playerRefusal(s, req.query.token, error.code, nonce);
      return reply.status(refusal.status).type('text/html; charset=utf-8').send(refusal.html);
    }
    const sandbox = await sandboxOf(s, session);
    const latest = await roundRepository.latest(s.db.reads, 'crash', sandbox);
    playerPageHeaders(reply, nonce);
    const html = crashPlayerPage({
      session,
      token: req.query.token!,
      nonce,
      serverNow: s.clock.now(),
      round: latest ? presentRound(latest) : null,
      recent: await recentCrashPoints(s.db.reads, 12, sandbox),
    });
    return reply.type('text/html; charset=utf-8').send(html);
  });

  app.get('/play/verify', async (req: FastifyRequest<{ Querystring: { token?: string; round?: string } }>, reply) => {
    const nonce = newNonce();
    let session: PlayerSession;
    try {
      session = await s.sessions.byToken(req.query.token);
    } catch (error) {
      if (!isDomainError(error)) throw error;
      playerPageHeaders(reply, nonce);
      const refusal = await playerRefusal(s, req.query.token, error.code, nonce);
      return reply.status(refusal.status).type('text/html; charset=utf-8').send(refusal.html);
    }
    const recent = await s.db.reads.all<{ id: string; game: VerifiableRound['game']; round_number: number }>(
      `SELECT id, game, round_number FROM rounds WHERE status = 'closed' AND operator_id IS NULL ORDER BY closed_at DESC LIMIT 12`,
    );
    const asked = req.query.round;
    const roundId = typeof asked === 'string' && /^[\x21-\x7e]{1,100}$/.test(asked) ? asked : null;
    playerPageHeaders(reply, nonce);
    const html = verifyPlayerPage({
      session,
      token: req.query.token!,
      nonce,
      serverNow: s.clock.now(),
      roundId,
      recent: recent.map((r) => ({ round_id: r.id, game: r.game, round_number: Number(r.round_number) })),
    });
    return reply.type('text/html; charset=utf-8').send(html);
  });

  app.get('/play/crash/feed', async (req: TokenReq, reply) => {
    const session = await s.sessions.byToken(req.query.token, s.db.reads);
    const sandbox = await sandboxOf(s, session);
    await streamFeed(req, reply, sandbox === null ? s.feed : s.sandbox.feedOf(sandbox), 'crash', session.id);
    const timer = setTimeout(() => reply.raw.end(), Math.min(Math.max(0, session.expiresAt - s.clock.now()), 2 ** 31 - 1));
    timer.unref();
    reply.raw.on('close', () => clearTimeout(timer));
  });
}
