import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { formatMultiplier, parseMultiplier } from '../../games/crash/multiplier';
import { DomainError } from '../../errors/codes';
import { currencyExponent, decimalToMinor, minorToDecimal } from '../../money/currency';
import type { Game } from '../../games/engine/round';
import type { SandboxScript } from '../../sandbox/sandbox-settings';
import type { AppServices } from '../../services';
import { keyedPost, replayable, replayableErrors } from '../keyed-write';
import { guardSurface } from '../surface/guard-surface';
import type { Surface } from '../surface/surface';
import { authHeadersFor, keyedHeadersFor, SIGNED_ROUTE_ERRORS } from '../webhooks/schemas';

const errors = SIGNED_ROUTE_ERRORS;

const MAX_SCRIPTED = 100;

const CrashOutcomesBody = Type.Object(
  {
    crash_points: Type.Array(Type.Number({ minimum: 1, maximum: 1_000_000 }), {
      minItems: 1,
      maxItems: MAX_SCRIPTED,
      description: `must be 1 to ${MAX_SCRIPTED} multipliers from 1.00 to 1000000 with at most 2 decimals`,
    }),
  },
  { title: 'ScriptCrashOutcomesRequest', additionalProperties: false },
);

const RaceOutcomesBody = Type.Object(
  {
    winners: Type.Array(Type.String({ minLength: 1, maxLength: 32 }), {
      minItems: 1,
      maxItems: MAX_SCRIPTED,
      description: `must be 1 to ${MAX_SCRIPTED} stock symbols`,
    }),
  },
  { title: 'ScriptStockRaceOutcomesRequest', additionalProperties: false },
);

const Window = Type.Integer({
  minimum: 100,
  maximum: 600_000,
  description: 'must be an integer from 100 to 600000 (ms)',
});
const Pause = Type.Integer({ minimum: 0, maximum: 600_000, description: 'must be an integer from 0 to 600000 (ms)' });

const TimingBody = Type.Object(
  {
    crash: Type.Optional(
      Type.Object(
        { betting_window_ms: Type.Optional(Window), pause_ms: Type.Optional(Pause) },
        { additionalProperties: false },
      ),
    ),
    stock_race: Type.Optional(
      Type.Object(
        { betting_window_ms: Type.Optional(Window), race_ms: Type.Optional(Window), pause_ms: Type.Optional(Pause) },
        { additionalProperties: false },
      ),
    ),
  },
  { title: 'SandboxTimingRequest', additionalProperties: false },
);

const TimingView = Type.Object(
  {
    livemode: Type.Boolean(),
    crash: Type.Object({ betting_window_ms: Type.Integer(), pause_ms: Type.Integer() }),
    stock_race: Type.Object({ betting_window_ms: Type.Integer(), race_ms: Type.Integer(), pause_ms: Type.Integer() }),
  },
  { title: 'SandboxTiming' },
);

const BalanceBody = Type.Object(
  {
    player_ref: Type.String({ minLength: 1, maxLength: 120, description: 'must be a string of 1 to 120 characters' }),
    currency: Type.String({ pattern: '^[A-Z]{3}$', description: 'must be an ISO 4217 code' }),
    balance: Type.Number({ minimum: 0, description: 'must be a non-negative decimal amount in the currency' }),
  },
  { title: 'SandboxBalanceRequest', additionalProperties: false },
);

const BalanceView = Type.Object(
  { player_ref: Type.String(), currency: Type.String(), balance: Type.Number() },
  { title: 'SandboxBalance' },
);
/** The balance as set: test data, marked as every other sandbox answer is. */
const BalanceSetView = Type.Object(
  {
    livemode: Type.Boolean(),
    player_ref: Type.String(),
    currency: Type.String(),
    balance: Type.Number(),
  },
  { title: 'SandboxBalanceSet' },
);

const FailureBody = Type.Object(
  {
    mode: Type.Union([Type.Literal('none'), Type.Literal('timeout'), Type.Literal('error_500')], {
      description: 'must be none, timeout or error_500',
    }),
    count: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 1000,
        description: 'must be an integer from 1 to 1000: how many settle calls fail',
      }),
    ),
  },
  { title: 'SandboxWalletFailuresRequest', additionalProperties: false },
);

const FailureView = Type.Object(
  {
    livemode: Type.Boolean(),
    mode: Type.String(),
    remaining: Type.Union([Type.Integer(), Type.Null()], {
      description: 'settle calls left to fail; null: until switched off',
    }),
  },
  { title: 'SandboxWalletFailures' },
);

const ScriptView = Type.Object(
  {
    livemode: Type.Boolean(),
    game: Type.String(),
    pending: Type.Array(Type.Object({}, { additionalProperties: true }), {
      description: 'queued outcomes, next first; each is used by the next sandbox round that takes a bet',
    }),
  },
  { title: 'SandboxOutcomeQueue' },
);

const presentScripts = (game: Game, scripts: SandboxScript[]) => ({
  livemode: false,
  game,
  pending: scripts.map((x) =>
    'crash_point' in x.outcome ? { crash_point: formatMultiplier(x.outcome.crash_point) } : x.outcome,
  ),
});

/**
 * Test mode: calls only a test-mode (sandbox) key may make, on both surfaces. A live key is refused
 * with 403 SANDBOX_ONLY before its body is even validated, and the attempt is logged: scripting
 * outcomes with a live key is either a mistake in an integration or someone probing.
 */
export function sandboxRoutes(surface: Surface) {
  return async function register(app: FastifyInstance, s: AppServices): Promise<void> {
    const r = app.withTypeProvider<TypeBoxTypeProvider>();
    guardSurface(app, surface, s);
    app.addHook('preValidation', async (req: FastifyRequest) => {
      const operator = req.operator!;
      if (operator.mode === 'test') return;
      req.log.warn(
        { operator_id: operator.id, method: req.method, path: req.url.split('?')[0], surface: surface.name },
        'refused a sandbox call made with a live key',
      );
      throw new DomainError('SANDBOX_ONLY', 'sandbox calls need a test-mode key (pk_test_…); this key is live');
    });
    const headers = authHeadersFor(surface);
    const keyedHeaders = keyedHeadersFor(surface);
    const tags = ['Sandbox'];
    const keyed = { idempotency: s.idempotency, surface };

    r.post(
      '/sandbox/crash/next-outcomes',
      {
        schema: {
          summary: 'Script the crash points of your next sandbox Crash rounds (test keys only)',
          description:
            'Each queued crash point is used, in order, by the next sandbox round that takes at least one bet.',
          tags,
          headers: keyedHeaders,
          body: CrashOutcomesBody,
          response: { 200: replayable(ScriptView), ...replayableErrors(errors) },
        },
      },
      async (req, reply) => {
        const points = req.body.crash_points.map((p) => {
          const hundredths = parseMultiplier(p);
          if (hundredths === null || hundredths < 100) {
            throw new DomainError(
              'VALIDATION_FAILED',
              `field "crash_points" must hold multipliers of at least 1.00 with at most 2 decimals (got ${p})`,
            );
          }
          return { crash_point: hundredths };
        });
        return keyedPost(
          req,
          reply,
          keyed,
          { status: 200 },
          (inTx) => s.sandbox.script(req.operator!, 'crash', points, inTx),
          (queued) => presentScripts('crash', queued),
        );
      },
    );

    r.post(
      '/sandbox/stock-race/next-outcomes',
      {
        schema: {
          summary: 'Script the winners of your next sandbox Stock Race rounds (test keys only)',
          description: 'Each queued winner wins, in order, the next sandbox round that takes at least one bet.',
          tags,
          headers: keyedHeaders,
          body: RaceOutcomesBody,
          response: { 200: replayable(ScriptView), ...replayableErrors(errors) },
        },
      },
      async (req, reply) => {
        const symbols = s.config.stockRace.symbols;
        const unknown = req.body.winners.filter((w) => !symbols.includes(w));
        if (unknown.length > 0) {
          throw new DomainError(
            'INVALID_SELECTION',
            `unknown stock symbol(s) ${unknown.join(', ')}; the races run ${symbols.join(', ')}`,
          );
        }
        const outcomes = req.body.winners.map((winner) => ({ winner }));
        return keyedPost(
          req,
          reply,
          keyed,
          { status: 200 },
          (inTx) => s.sandbox.script(req.operator!, 'stock_race', outcomes, inTx),
          (queued) => presentScripts('stock_race', queued),
        );
      },
    );

    for (const [path, game] of [
      ['/sandbox/crash/next-outcomes', 'crash'],
      ['/sandbox/stock-race/next-outcomes', 'stock_race'],
    ] as const) {
      r.get(
        path,
        { schema: { summary: 'Outcomes still queued', tags, headers, response: { 200: ScriptView, ...errors } } },
        async (req) => presentScripts(game, await s.sandbox.pendingScripts(req.operator!, game)),
      );
      r.delete(
        path,
        {
          schema: {
            summary: 'Drop the outcomes still queued',
            tags,
            headers,
            response: { 200: ScriptView, ...errors },
          },
        },
        async (req) => {
          await s.sandbox.clearScripts(req.operator!, game);
          return presentScripts(game, []);
        },
      );
    }

    r.get(
      '/sandbox/timing',
      { schema: { summary: 'Round timing of your sandbox', tags, headers, response: { 200: TimingView, ...errors } } },
      async (req) => ({
        livemode: false,
        ...(await s.sandbox.timing(req.operator!.id)),
      }),
    );

    r.post(
      '/sandbox/timing',
      {
        schema: {
          summary: 'Set the round timing of your sandbox (test keys only); applies from the next round',
          tags,
          headers: keyedHeaders,
          body: TimingBody,
          response: { 200: replayable(TimingView), ...replayableErrors(errors) },
        },
      },
      async (req, reply) =>
        keyedPost(
          req,
          reply,
          keyed,
          { status: 200 },
          (inTx) => s.sandbox.setTiming(req.operator!, req.body, inTx),
          (timing) => ({ livemode: false, ...timing }),
        ),
    );

    r.post(
      '/sandbox/wallet/balances',
      {
        schema: {
          summary: "Set a player's balance in the simulated wallet (sandbox operators without a wallet_url)",
          tags,
          headers: keyedHeaders,
          body: BalanceBody,
          response: { 200: replayable(BalanceSetView), ...replayableErrors(errors) },
        },
      },
      async (req, reply) => {
        const { player_ref, currency, balance } = req.body;
        const exponent = currencyExponent(currency);
        const minor = decimalToMinor(balance, exponent);
        return keyedPost(
          req,
          reply,
          keyed,
          { status: 200 },
          (inTx) => s.sandbox.setBalance(req.operator!, { player_ref, currency, balance: minor }, inTx),
          () => ({ livemode: false, player_ref, currency, balance: minorToDecimal(minor, exponent) }),
        );
      },
    );

    r.get(
      '/sandbox/wallet/balances/:player_ref',
      {
        schema: {
          summary: "A player's balances in the simulated wallet",
          tags,
          headers,
          params: Type.Object({ player_ref: Type.String({ minLength: 1, maxLength: 120 }) }),
          response: { 200: Type.Object({ livemode: Type.Boolean(), balances: Type.Array(BalanceView) }), ...errors },
        },
      },
      async (req) => {
        const rows = await s.sandbox.balances(req.operator!, req.params.player_ref);
        return {
          livemode: false,
          balances: rows.map((b) => ({ ...b, balance: minorToDecimal(b.balance, currencyExponent(b.currency)) })),
        };
      },
    );

    r.post(
      '/sandbox/wallet/failures',
      {
        schema: {
          summary: 'Make the simulated wallet time out or answer 500 on the next settle calls',
          description:
            'timeout: the settlement is applied but the answer never arrives (outcome unknown), ' +
            'so it is retried and the retry must not ' +
            'credit twice. error_500: nothing is applied. Without count, every call fails until mode none.',
          tags,
          headers: keyedHeaders,
          body: FailureBody,
          response: { 200: replayable(FailureView), ...replayableErrors(errors) },
        },
      },
      async (req, reply) => {
        const remaining = req.body.mode === 'none' ? null : (req.body.count ?? null);
        return keyedPost(
          req,
          reply,
          keyed,
          { status: 200 },
          (inTx) => s.sandbox.setWalletSwitch(req.operator!, { failure: req.body.mode, remaining }, inTx),
          (value) => ({ livemode: false, mode: value.failure, remaining: value.remaining }),
        );
      },
    );
  };
}
