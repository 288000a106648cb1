import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { crashPointFromHash, isGameHash, previousHash } from '../crash/fairness';
import { crashElapsedMs, formatMultiplier } from '../crash/multiplier';
import { DomainError } from '../errors/codes';
import { roundRepository } from '../rounds/round-repository';
import { sha256Hex } from '../rounds/fair-chain';
import { deriveStockRaceOutcome, pctFromBp } from '../stock-race/outcome';
import type { AppServices } from '../services';
import { SURFACE_B_STATUS } from './error-maps';
import { errorHandler, type Surface } from './surface';

/** Unauthenticated endpoints: health, fairness verification. Errors use the Surface B shape. */
const publicSurface: Surface = {
  name: 'B',
  headers: { apiKey: 'x-operator-key', signature: 'x-signature', timestamp: 'x-timestamp' },
  status: SURFACE_B_STATUS,
  errorBody: (code, message, traceId) => (code === 'INTERNAL' ? { error: code, trace_id: traceId } : { error: code, message }),
};

const Seed = Type.String({ pattern: '^[0-9a-f]{64}$', description: 'must be the 64 lowercase hex characters of a revealed seed' });

export async function publicRoutes(app: FastifyInstance, s: AppServices): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  app.setErrorHandler(errorHandler(publicSurface));

  r.get(
    '/fairness/crash',
    {
      schema: {
        summary: 'Recompute a Crash round from its revealed seed',
        description:
          'crash = max(1.00, floor((10000 - edge_bp) * 2^52 / (100 * (2^52 - r))) / 100), r = first 52 bits of HMAC-SHA256(key = salt text, message = seed bytes). ' +
          '`previous_seed` = sha256(seed text) is the seed of the round before it in the chain, and the `seed_hash` this round published.',
        tags: ['Fairness'],
        querystring: Type.Object(
          {
            seed: Seed,
            salt: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
            house_edge_bp: Type.Optional(Type.String({ pattern: '^[0-9]{1,4}$', description: 'must be basis points, 0 to 9999' })),
          },
          { additionalProperties: false },
        ),
      },
    },
    async (req) => {
      const { seed } = req.query;
      if (!isGameHash(seed)) throw new DomainError('VALIDATION_FAILED', 'seed must be 64 lowercase hex characters');
      const salt = req.query.salt ?? s.config.crash.salt;
      const edge = req.query.house_edge_bp === undefined ? s.config.crash.houseEdgeBp : Number(req.query.house_edge_bp);
      const crash = crashPointFromHash(seed, salt, edge);
      return {
        seed,
        seed_hash: sha256Hex(seed),
        previous_seed: previousHash(seed),
        salt,
        house_edge_bp: edge,
        crash_point: formatMultiplier(crash),
        running_ms: crashElapsedMs(crash),
      };
    },
  );

  r.get(
    '/fairness/stock-race',
    {
      schema: {
        summary: 'Recompute a Stock Race round from its revealed seed',
        description:
          'Per symbol: digest = HMAC-SHA256(key = seed bytes, message = symbol); move = (first 52 bits mod 2001) - 1000 hundredths of a percent. ' +
          'The best move wins; equal moves are ordered by the larger digest.',
        tags: ['Fairness'],
        querystring: Type.Object(
          {
            seed: Seed,
            symbols: Type.Optional(Type.String({ description: 'comma-separated, in the round\'s order; defaults to the configured list' })),
          },
          { additionalProperties: false },
        ),
      },
    },
    async (req) => {
      const symbols = req.query.symbols ? req.query.symbols.split(',').map((x) => x.trim()) : s.config.stockRace.symbols;
      const outcome = deriveStockRaceOutcome(req.query.seed, symbols);
      return {
        seed: req.query.seed,
        seed_hash: sha256Hex(req.query.seed),
        previous_seed: previousHash(req.query.seed),
        winner: outcome.winner,
        pct: pctFromBp(outcome.winner_pct_bp),
        stocks: outcome.moves.map((m) => ({ symbol: m.symbol, pct: pctFromBp(m.pct_bp) })),
      };
    },
  );

  r.get(
    '/fairness/rounds/:round_id',
    {
      schema: {
        summary: 'Check a finished round against its commitment and recompute its outcome',
        tags: ['Fairness'],
        params: Type.Object({ round_id: Type.String({ minLength: 1, maxLength: 100 }) }),
      },
    },
    async (req) => {
      const round = await roundRepository.byId(s.db, req.params.round_id);
      // Sandbox rounds are test data, some with scripted outcomes: not part of the public fairness record.
      if (!round || round.operatorId !== null) {
        throw new DomainError('ROUND_NOT_FOUND', `no round ${req.params.round_id}`);
      }
      if (round.status !== 'closed' && round.status !== 'void') {
        return { round_id: round.id, status: round.status, seed_hash: round.seedHash, verified: null, reason: 'the seed is revealed when the round ends' };
      }
      const commitmentHolds = sha256Hex(round.seed) === round.seedHash;
      const recomputed =
        round.game === 'crash'
          ? { crash_point: formatMultiplier(crashPointFromHash(round.seed, String(round.settings.salt), Number(round.settings.house_edge_bp))) }
          : (() => {
              const o = deriveStockRaceOutcome(round.seed, round.settings.symbols as string[]);
              return { winner: o.winner, pct: pctFromBp(o.winner_pct_bp) };
            })();
      return { round_id: round.id, game: round.game, status: round.status, seed: round.seed, seed_hash: round.seedHash, commitment_holds: commitmentHolds, recomputed };
    },
  );
}
