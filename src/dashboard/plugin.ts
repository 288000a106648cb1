import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { randomBytes } from 'node:crypto';
import { DomainError, isDomainError, type ErrorCode } from '../errors/codes';
import { SURFACE_B_STATUS } from '../http/error-maps';
import { hideFromOpenApi } from '../http/openapi';
import type { AppServices } from '../services';
import { ASSET_PATH, DASHBOARD_ASSETS, serveAssets } from './assets';
import { DEVICE_COOKIE_TTL_MS, sameToken } from '../dashboard-users/dashboard-auth';
import './context';
import { field, hasNul, type FormBody } from './forms';
import { complianceRoutes } from './routes/compliance';
import { credentialRoutes } from './routes/credentials';
import { liveRoutes } from './routes/live';
import { roundRoutes } from './routes/rounds';
import { webhookRoutes } from './routes/webhooks';
import { errorPage, loginPage } from './views/login';

const SESSION_COOKIE = 'dash_session';
/** Proof that this browser signed in before: others' failed sign-ins do not hold it back (login-throttle.ts). */
const DEVICE_COOKIE = 'dash_device';
const LOGIN_COOKIE = 'dash_login';
/** How long a sign-in form stays usable: its double-submit token cookie is short-lived (docs/dashboard.md). */
const LOGIN_FORM_SECONDS = 3600;
// Printable ASCII only: a Location header cannot carry anything else (Node refuses it with a 500).
const NEXT = /^\/dashboard(?:[/?][!-[\]-~]*)?$/;

/**
 * Routes a script fetches rather than a person opens (JSON, live feeds, the delivery log fragment):
 * signed out, they answer 401 instead of redirecting to the sign-in page, which the script would follow
 * and then show inside its page.
 */
const NOT_A_PAGE = /^\/dashboard\/(?:api\/|feed\/|webhooks\/[^/]+\/log$)/;

/** Where to go after signing in: only somewhere inside the dashboard, never another site. */
const safeNext = (raw: unknown): string =>
  typeof raw === 'string' && NEXT.test(raw) && !raw.includes('//') ? raw : '/dashboard';

const refusalCode = (status: number): ErrorCode =>
  status === 413 ? 'BODY_TOO_LARGE' : status === 415 ? 'UNSUPPORTED_MEDIA_TYPE' : 'VALIDATION_FAILED';
const refusalMessage = (status: number): string =>
  status === 413
    ? 'The form is larger than the dashboard accepts.'
    : status === 415
      ? 'The dashboard accepts forms (application/x-www-form-urlencoded) only.'
      : 'The request could not be read.';

/**
 * The partner dashboard, under /dashboard: server-rendered pages, one small script per page, a
 * cookie session per signed-in user, a CSRF token on every state change. Everything it shows or
 * changes is scoped to the signed-in user's operator.
 */
export async function dashboardRoutes(app: FastifyInstance, services: AppServices): Promise<void> {
  hideFromOpenApi(app);
  const auth = services.dashboardUsers;
  // Plain HTTP is only ever served in development and tests; everywhere else the cookie needs TLS.
  const secure = services.config.env !== 'development' && services.config.env !== 'test';
  if (!app.hasRequestDecorator('cookies')) await app.register(cookie);
  // The service's root parser set is JSON only; forms are accepted here and nowhere else.
  if (!app.hasContentTypeParser('application/x-www-form-urlencoded'))
    await app.register(formbody, { bodyLimit: 16 * 1024 });

  // JSON bodies are checked at the root; a form's %00 decodes to a NUL that PostgreSQL text cannot hold.
  app.addHook('preValidation', async (req) => {
    if (hasNul(req.body)) throw new DomainError('VALIDATION_FAILED', 'the form contains a NUL character (%00)');
  });

  app.addHook('onSend', async (req, reply) => {
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'same-origin');
    reply.header('x-frame-options', 'DENY');
    reply.header(
      'content-security-policy',
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    if (!req.url.startsWith(ASSET_PATH)) reply.header('cache-control', 'no-store');
  });

  app.setErrorHandler((error: FastifyError | Error, req, reply) => {
    const domain = isDomainError(error) ? error : null;
    const validation = (error as FastifyError).validation ? (error as FastifyError).message : null;
    // Fastify's own refusals (form too large, not a form, bad Content-Length) keep their 4xx.
    const given = (error as FastifyError).statusCode;
    const refused = !domain && !validation && typeof given === 'number' && given >= 400 && given < 500 ? given : null;
    const status = domain ? SURFACE_B_STATUS[domain.code] : validation ? 400 : (refused ?? 500);
    if (status >= 500) req.log.error({ err: error }, 'dashboard request failed');
    const fault = `Something went wrong on our side (trace ${String(req.id)}).`;
    const message = domain ? domain.message : (validation ?? (refused ? refusalMessage(refused) : fault));
    const code = domain?.code ?? (validation ? 'VALIDATION_FAILED' : refused ? refusalCode(refused) : 'INTERNAL');
    if (req.url.startsWith('/dashboard/api/')) return reply.status(status).send({ error: code, message });
    const title = status === 404 ? 'Not found' : status >= 500 ? 'Error' : 'That did not work';
    return reply
      .status(status)
      .type('text/html; charset=utf-8')
      .send(errorPage({ status, title, message, signedIn: Boolean(req.dashboard), user: req.dashboard?.user }));
  });
  app.setNotFoundHandler((req, reply) => {
    void reply
      .status(404)
      .type('text/html; charset=utf-8')
      .send(
        errorPage({
          status: 404,
          title: 'Not found',
          message: `There is no page at ${req.url.split('?')[0]}.`,
          signedIn: false,
        }),
      );
  });

  serveAssets(app, '/assets', DASHBOARD_ASSETS);

  const showLogin = (
    reply: FastifyReply,
    o: { next: string; email?: string; error?: string | null; notice?: string | null; status?: number },
  ) => {
    // Login CSRF: a double-submit token ties the form to this browser before any session exists.
    const csrf = randomBytes(24).toString('base64url');
    reply.setCookie(LOGIN_COOKIE, csrf, {
      path: '/dashboard/login',
      maxAge: LOGIN_FORM_SECONDS,
      httpOnly: true,
      secure,
      sameSite: 'strict',
    });
    return reply
      .status(o.status ?? 200)
      .type('text/html; charset=utf-8')
      .send(loginPage({ ...o, csrf }));
  };

  app.get('/login', async (req: FastifyRequest<{ Querystring: Record<string, string> }>, reply) => {
    if (await auth.session(req.cookies[SESSION_COOKIE])) return reply.redirect(safeNext(req.query.next), 303);
    return showLogin(reply, {
      next: safeNext(req.query.next),
      notice: req.query.signed_out ? 'You are signed out.' : null,
    });
  });

  app.post('/login', async (req, reply) => {
    const body = (req.body ?? {}) as FormBody;
    const next = safeNext(field(body, 'next'));
    const email = field(body, 'email');
    const expected = req.cookies[LOGIN_COOKIE];
    if (!expected || !sameToken(field(body, '_csrf'), expected)) {
      return showLogin(reply, { next, email, status: 403, error: 'The sign-in form expired. Please try again.' });
    }
    try {
      const { sessionId, session, deviceCookie } = await auth.signIn(
        email,
        field(body, 'password'),
        req.ip,
        req.cookies[DEVICE_COOKIE],
      );
      // The session this browser held until now (another tab's, or another user's) ends here: the
      // new id replaces it, and the old one must not stay usable on the server for the rest of its 8 h.
      const previous = req.cookies[SESSION_COOKIE];
      if (previous && previous !== sessionId) await auth.signOut(previous);
      reply.clearCookie(LOGIN_COOKIE, { path: '/dashboard/login' });
      reply.setCookie(SESSION_COOKIE, sessionId, {
        path: '/dashboard',
        httpOnly: true,
        secure,
        sameSite: 'strict',
        expires: new Date(session.expiresAt),
      });
      // Sent to the sign-in form only, and readable by no script.
      reply.setCookie(DEVICE_COOKIE, deviceCookie, {
        path: '/dashboard/login',
        httpOnly: true,
        secure,
        sameSite: 'strict',
        maxAge: DEVICE_COOKIE_TTL_MS / 1000,
      });
      return reply.redirect(next, 303);
    } catch (error) {
      if (!isDomainError(error)) throw error;
      if (error.code === 'RATE_LIMITED') {
        const wait = Number(error.details?.retryAfterSeconds ?? 1);
        reply.header('retry-after', String(wait));
        const text = `Too many failed sign-ins: try again in ${wait} s.`;
        return showLogin(reply, { next, email, status: 429, error: text });
      }
      if (error.code === 'SERVICE_UNAVAILABLE') {
        reply.header('retry-after', '1');
        const text = 'Sign-in is unavailable for a moment. Please try again shortly.';
        return showLogin(reply, { next, email, status: 503, error: text });
      }
      return showLogin(reply, { next, email, status: 401, error: 'Wrong email or password.' });
    }
  });

  // Everything below needs a signed-in user; every state change also needs the session's CSRF token.
  await app.register(async (scope) => {
    scope.addHook('preHandler', async (req, reply) => {
      const session = await auth.session(req.cookies[SESSION_COOKIE]);
      if (!session) {
        if (req.method === 'GET' && !NOT_A_PAGE.test(req.routeOptions.url ?? req.url)) {
          return reply.redirect(`/dashboard/login?next=${encodeURIComponent(req.url)}`, 303);
        }
        return reply.status(401).type('text/plain; charset=utf-8').send('sign in first');
      }
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        const given = field((req.body ?? {}) as FormBody, '_csrf') || String(req.headers['x-csrf-token'] ?? '');
        if (!sameToken(given, session.csrfToken)) {
          return reply
            .status(403)
            .type('text/html; charset=utf-8')
            .send(
              errorPage({
                status: 403,
                title: 'Refused',
                message: 'This form is out of date (its security token does not match). Reload the page and try again.',
                signedIn: true,
              }),
            );
        }
      }
      const operator = await services.operators.get(session.user.operatorId);
      // A disabled operator's users keep their sessions (enabling the operator restores them) but
      // can neither see nor change anything meanwhile: no endpoints, no secret rotation, no feed
      // (signing out still works). The status is read from the store on every request, so a
      // disable applies at once.
      if (operator.status !== 'active' && req.routeOptions.url !== '/dashboard/logout') {
        const message = 'This operator account is disabled. Contact the service provider to have it enabled again.';
        if (req.url.startsWith('/dashboard/api/')) {
          return reply.status(403).send({ error: 'OPERATOR_DISABLED', message });
        }
        return reply
          .status(403)
          .type('text/html; charset=utf-8')
          .send(errorPage({ status: 403, title: 'Account disabled', message, signedIn: false }));
      }
      const cookie = req.cookies[SESSION_COOKIE];
      req.dashboard = {
        session,
        operator,
        stillSignedIn: async () =>
          (await auth.session(cookie)) !== null && (await services.operators.isActive(operator.id)),
        user: {
          email: session.user.email,
          operatorName: operator.name,
          csrfToken: session.csrfToken,
          testMode: operator.mode === 'test',
        },
      };
    });

    scope.post('/logout', async (req, reply) => {
      await auth.signOut(req.cookies[SESSION_COOKIE]);
      reply.clearCookie(SESSION_COOKIE, { path: '/dashboard' });
      return reply.redirect('/dashboard/login?signed_out=1', 303);
    });

    await liveRoutes(scope, services);
    await webhookRoutes(scope, services);
    await credentialRoutes(scope, services);
    await roundRoutes(scope, services);
    await complianceRoutes(scope, services);
  });
}
