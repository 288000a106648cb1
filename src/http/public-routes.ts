import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { type Static, type TSchema, Type } from 'typebox';
import { crashPointFromHash } from '../games/crash/fairness';
import { isGameHash, previousHash } from '../games/engine/hash-chain';
import { crashElapsedMs, formatMultiplier } from '../games/crash/multiplier';
import { DomainError } from '../errors/codes';
import { presentChain } from '../games/engine/chain-presenter';
import { CONTRIBUTION_PATTERN, sha256Hex } from '../games/engine/fair-chain';
import { deriveStockRaceOutcome, pctFromBp, raceKey } from '../games/stock-race/outcome';
import type { AppServices } from '../services';
import { documentSecurity, withRetryAfter } from './openapi';
import { ErrorB, FaultB } from './surface-b/schemas';
import { HAS_MORE_DESCRIPTION } from './webhooks/schemas';

const Seed = Type.String({
  pattern: '^[0-9a-f]{64}$',
  description: 'must be the 64 lowercase hex characters of a revealed seed',
});

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

/** The errors of these routes, in Surface B's shape (the server's root handler answers them). */
const errors = withRetryAfter({ 400: ErrorB, 404: ErrorB, 500: FaultB, 503: FaultB });
const writeErrors = withRetryAfter({ ...errors, 409: ErrorB, 413: ErrorB, 415: ErrorB });

const CrashRecomputed = Type.Object(
  {
    seed: Type.String(),
    seed_hash: Type.String({ description: 'sha256 of the seed text: the commitment the round published' }),
    previous_seed: Type.String({ description: 'the seed of the round before it in the chain' }),
    salt: Type.String(),
    house_edge_bp: Type.Integer(),
    crash_point: Type.Number(),
    running_ms: Type.Integer({ description: 'how long the multiplier climbs before it crashes (milliseconds)' }),
  },
  { title: 'CrashRecomputation' },
);

const StockMove = Type.Object({ symbol: Type.String(), pct: Type.Number() }, { title: 'StockMove' });

const RaceRecomputed = Type.Object(
  {
    seed: Type.String(),
    salt: Nullable(Type.String()),
    race_key: Type.String(),
    seed_hash: Type.String(),
    previous_seed: Type.String(),
    winner: Type.String(),
    pct: Type.Number(),
    stocks: Type.Array(StockMove),
  },
  { title: 'StockRaceRecomputation' },
);

const ChainView = Type.Object(
  {
    chain_id: Type.String(),
    game: Type.Union([Type.Literal('crash'), Type.Literal('stock_race')]),
    length: Type.Integer(),
    origin: Type.String({ description: 'generated | fixture' }),
    status: Type.String({ description: 'awaiting_contribution | playable | refused' }),
    commitment: Type.String(),
    committed_at: Type.Integer(),
    contribution: Nullable(Type.String()),
    contributor: Nullable(Type.String()),
    contribution_automatic: Nullable(Type.Boolean()),
    salt: Nullable(Type.String()),
    salt_fixed_at: Nullable(Type.Integer()),
    first_played_idx: Nullable(Type.Integer()),
    first_played_at: Nullable(Type.Integer()),
  },
  { title: 'HashChain' },
);

const ChainDetail = Type.Object(
  {
    ...ChainView.properties,
    revealed_count: Type.Integer(),
    all_verified: Type.Boolean(),
    revealed_seeds: Type.Array(
      Type.Object({ idx: Type.Integer(), round_id: Type.String(), seed: Type.String(), verified: Type.Boolean() }),
    ),
  },
  { title: 'HashChainDetail' },
);

/**
 * The chain list's page sizes. Each game publishes a chain per FAIR_CHAIN_LENGTH rounds (10,000 by
 * default: a few days of play), so a deployment gathers a few hundred chains a year; the default page
 * keeps answering the whole list, as it did before it was paged, for years.
 */
const DEFAULT_CHAIN_PAGE = 1000;
const MAX_CHAIN_PAGE = 2000;

const ChainListQuery = Type.Object(
  {
    game: Type.Optional(Type.Union([Type.Literal('crash'), Type.Literal('stock_race')])),
    limit: Type.Optional(
      Type.String({
        pattern: '^(?:[1-9][0-9]{0,2}|1[0-9]{3}|2000)$',
        description: `must be an integer from 1 to ${MAX_CHAIN_PAGE}`,
      }),
    ),
    starting_after: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description: 'must be a chain_id: the last one of the previous page, after which this page goes on',
      }),
    ),
  },
  { additionalProperties: false },
);

const RoundCheck = Type.Object(
  {
    round_id: Type.String(),
    game: Type.Union([Type.Literal('crash'), Type.Literal('stock_race')]),
    status: Type.String({ description: 'open | running | closed | void' }),
    seed: Type.Optional(Type.String({ description: 'once the round is closed or void' })),
    seed_hash: Type.String(),
    chain_id: Type.String(),
    chain_idx: Type.Integer(),
    commitment: Nullable(Type.String()),
    salt: Nullable(Type.String()),
    house_edge_bp: Type.Optional(Type.Integer({ description: 'Crash' })),
    rtp_bp: Type.Optional(Type.Integer({ description: 'Crash' })),
    symbols: Type.Optional(Type.Array(Type.String(), { description: 'Stock Race' })),
    verified: Type.Optional(Type.Null({ description: 'before the round ends: nothing to check yet' })),
    reason: Type.Optional(Type.String({ description: 'before the round ends: why there is nothing to check' })),
    outcome: Type.Optional(Nullable(Type.Object({}, { additionalProperties: true }))),
    commitment_holds: Type.Optional(Type.Boolean({ description: 'sha256(seed) is the seed_hash published' })),
    links_to_commitment: Type.Optional(
      Type.Boolean({ description: "the seed hashes forward to the chain's commitment" }),
    ),
    recomputed: Type.Optional(
      Type.Object({}, { additionalProperties: true, description: 'the outcome recomputed from the seed' }),
    ),
  },
  { title: 'RoundVerification', description: 'fields from seed on are given once the round is closed or void' },
);

/**
 * Unauthenticated endpoints: fairness verification. Errors take Surface B's shape from the server's
 * root handler (every path outside /api/public/ gets it).
 */
export async function publicRoutes(app: FastifyInstance, s: AppServices): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  // Anyone may recompute a round: these operations need no credentials (an explicit empty list).
  documentSecurity(app, []);

  r.get(
    '/fairness/crash',
    {
      schema: {
        summary: 'Recompute a Crash round from its revealed seed',
        description:
          'crash = max(1.00, floor((10000 - edge_bp) * 2^52 / (100 * (2^52 - r))) / 100), ' +
          'r = first 52 bits of HMAC-SHA256(key = salt text, message = seed bytes). ' +
          '`previous_seed` = sha256(seed text) is the seed of the round before it in the chain, ' +
          'and the `seed_hash` this round published.',
        tags: ['Fairness'],
        querystring: Type.Object(
          {
            seed: Seed,
            salt: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
            house_edge_bp: Type.Optional(
              Type.String({ pattern: '^[0-9]{1,4}$', description: 'must be basis points, 0 to 9999' }),
            ),
          },
          { additionalProperties: false },
        ),
        response: { 200: CrashRecomputed, ...errors },
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
          'key = HMAC-SHA256(key = salt text, message = seed bytes), or the seed itself without a salt. ' +
          'Per symbol: digest = HMAC-SHA256(key = key bytes, message = symbol); ' +
          'move = (first 52 bits mod 2001) - 1000 hundredths of a percent. ' +
          'The best move wins; equal moves are ordered by the larger digest.',
        tags: ['Fairness'],
        querystring: Type.Object(
          {
            seed: Seed,
            salt: Type.Optional(
              Type.String({ minLength: 1, maxLength: 200, description: "the round's chain salt; none: unsalted" }),
            ),
            symbols: Type.Optional(
              Type.String({ description: "comma-separated, in the round's order; defaults to the configured list" }),
            ),
          },
          { additionalProperties: false },
        ),
        response: { 200: RaceRecomputed, ...errors },
      },
    },
    async (req) => {
      const symbols = req.query.symbols
        ? req.query.symbols.split(',').map((x) => x.trim())
        : s.config.stockRace.symbols;
      const key = raceKey(req.query.seed, req.query.salt ?? null);
      const outcome = deriveStockRaceOutcome(key, symbols);
      return {
        seed: req.query.seed,
        salt: req.query.salt ?? null,
        race_key: key,
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
        response: { 200: RoundCheck, ...errors },
      },
    },
    async (req) => {
      const round = await s.rounds.byId(req.params.round_id);
      // Sandbox rounds are test data, some with scripted outcomes: not part of the public fairness record.
      if (!round || round.operatorId !== null) {
        throw new DomainError('ROUND_NOT_FOUND', `no round ${req.params.round_id}`);
      }
      const chain = await s.fairChains.record(round.chainId);
      const edgeBp = Number(round.settings.house_edge_bp);
      // What a verifier needs besides the seed: the chain, the index and the rules frozen into the round.
      const verifyData = {
        chain_id: round.chainId,
        chain_idx: round.chainIdx,
        commitment: chain?.commitment ?? null,
        salt: typeof round.settings.salt === 'string' ? round.settings.salt : null,
        ...(round.game === 'crash'
          ? { house_edge_bp: edgeBp, rtp_bp: 10_000 - edgeBp }
          : { symbols: round.settings.symbols as string[] }),
      };
      if (round.status !== 'closed' && round.status !== 'void') {
        return {
          round_id: round.id,
          game: round.game,
          status: round.status,
          seed_hash: round.seedHash,
          ...verifyData,
          verified: null,
          reason: 'the seed is revealed when the round ends',
        };
      }
      const commitmentHolds = sha256Hex(round.seed) === round.seedHash;
      const linksToCommitment = chain ? hashForward(round.seed, round.chainIdx + 1) === chain.commitment : false;
      const recomputed =
        round.game === 'crash'
          ? {
              crash_point: formatMultiplier(
                crashPointFromHash(round.seed, String(round.settings.salt), Number(round.settings.house_edge_bp)),
              ),
            }
          : (() => {
              const key = raceKey(round.seed, verifyData.salt);
              const o = deriveStockRaceOutcome(key, round.settings.symbols as string[]);
              return { race_key: key, winner: o.winner, pct: pctFromBp(o.winner_pct_bp) };
            })();
      return {
        round_id: round.id,
        game: round.game,
        status: round.status,
        seed: round.seed,
        seed_hash: round.seedHash,
        ...verifyData,
        outcome: round.outcome,
        commitment_holds: commitmentHolds,
        links_to_commitment: linksToCommitment,
        recomputed,
      };
    },
  );

  r.get(
    '/fairness/chains',
    {
      schema: {
        summary: 'Every hash chain: its commitment, when it was published, its salt and when that was fixed',
        description:
          'Newest first (committed_at descending, then chain_id). `limit`: default ' +
          `${DEFAULT_CHAIN_PAGE}, maximum ${MAX_CHAIN_PAGE}; the default page holds every chain of a ` +
          'deployment younger than about three years at the default chain length and round timings, so ' +
          'a list that was not paged before answers the same until then. While `has_more` is true, pass ' +
          'the last `chain_id` of the page as `starting_after`; an id that is not a chain of the list ' +
          '(unknown, or of the other game when `game` is given) is 400 VALIDATION_FAILED.',
        tags: ['Fairness'],
        querystring: ChainListQuery,
        response: {
          200: Type.Object({
            chains: Type.Array(ChainView, { description: 'newest first (committed_at descending, then chain_id)' }),
            has_more: Type.Boolean({ description: HAS_MORE_DESCRIPTION }),
          }),
          ...errors,
        },
      },
    },
    async (req) => {
      const q = req.query;
      const page = await s.fairChains.page({
        game: q.game,
        limit: q.limit === undefined ? DEFAULT_CHAIN_PAGE : Number(q.limit),
        startingAfter: q.starting_after,
      });
      return {
        chains: page.chains.map((c) => presentChain(s.fairChains, c) as Static<typeof ChainView>),
        has_more: page.hasMore,
      };
    },
  );

  r.get(
    '/fairness/chains/:chain_id',
    {
      schema: {
        summary: "One chain's public record, with every revealed seed checked against the commitment",
        description:
          'A seed revealed at index i is `verified` when sha256 applied i + 1 times (each step to the ' +
          '64-character lowercase hex text of the previous result) gives the commitment. ' +
          'salt = sha256(commitment + ":" + contribution), hex.',
        tags: ['Fairness'],
        params: Type.Object({ chain_id: Type.String({ minLength: 1, maxLength: 100 }) }),
        response: { 200: ChainDetail, ...errors },
      },
    },
    async (req) => {
      const record = await s.fairChains.record(req.params.chain_id);
      if (!record) throw new DomainError('NOT_FOUND', `no hash chain ${req.params.chain_id}`);
      const revealed = await s.fairChains.revealed(record);
      return {
        ...(presentChain(s.fairChains, record) as Static<typeof ChainView>),
        revealed_count: revealed.length,
        all_verified: revealed.every((r) => r.verified),
        revealed_seeds: revealed.map((r) => ({ idx: r.idx, round_id: r.roundId, seed: r.seed, verified: r.verified })),
      };
    },
  );

  r.post(
    '/fairness/chains/:chain_id/contribution',
    {
      schema: {
        summary: "Contribute the value that fixes a chain's salt (the first contribution after the commitment wins)",
        tags: ['Fairness'],
        params: Type.Object({ chain_id: Type.String({ minLength: 1, maxLength: 100 }) }),
        body: Type.Object(
          {
            contributor: Type.String({ minLength: 1, maxLength: 64, description: 'who contributes, as shown' }),
            value: Type.String({
              pattern: CONTRIBUTION_PATTERN.source,
              description: 'must be 1 to 256 printable ASCII characters',
            }),
          },
          { additionalProperties: false },
        ),
        response: { 200: ChainView, ...writeErrors },
      },
    },
    async (req) => {
      const { contributor, value } = req.body;
      const record = await s.fairChains.contribute(req.params.chain_id, { contributor, value });
      return presentChain(s.fairChains, record) as Static<typeof ChainView>;
    },
  );
}

/** sha256 of the hex text, `steps` times: from a seed at index i, i + 1 steps reach the chain's commitment. */
function hashForward(seed: string, steps: number): string {
  let h = seed;
  for (let i = 0; i < steps; i++) h = sha256Hex(h);
  return h;
}
