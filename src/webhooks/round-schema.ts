import { Type } from 'typebox';

/**
 * The round fields every surface presents (see src/games/engine/round-presenter.ts). The read endpoints,
 * the live feed and the round.opened / round.closed webhooks all describe a round with these, so
 * the published schemas cannot drift apart. They live beside the webhook payloads rather than in a surface
 * because the payload catalogue (payloads.ts) describes them too, and webhooks import no surface.
 */
export const roundFields = {
  round_id: Type.String({ description: 'the round id' }),
  round_number: Type.Integer({ description: 'increasing per game' }),
  game: Type.Union([Type.Literal('crash'), Type.Literal('stock_race')], { description: 'the game' }),
  status: Type.Union([Type.Literal('open'), Type.Literal('running'), Type.Literal('closed'), Type.Literal('void')], {
    description: 'open | running | closed | void (the round could not complete: every stake is returned)',
  }),
  seed_hash: Type.String({ description: 'sha256 of the seed, the commitment published when the round opens' }),
  seed: Type.Union([Type.String(), Type.Null()], {
    description: 'the revealed seed once the round is closed or void; null before',
  }),
  opened_at: Type.Integer({ description: 'when the round opened (milliseconds since epoch)' }),
  betting_closes_at: Type.Integer({ description: 'end of the betting window (milliseconds since epoch)' }),
  running_at: Type.Union([Type.Integer(), Type.Null()], { description: 'when the multiplier / race started' }),
  closed_at: Type.Union([Type.Integer(), Type.Null()], {
    description: 'when the round closed with its outcome; null before',
  }),
  voided_at: Type.Union([Type.Integer(), Type.Null()], { description: 'when the round was voided; null unless void' }),
  void_reason: Type.Union([Type.String(), Type.Null()], {
    description: 'why the round could not complete; null unless void',
  }),
  livemode: Type.Boolean({ description: 'false for a sandbox round of a test-mode operator (test data)' }),
  scripted: Type.Optional(
    Type.Boolean({ description: 'sandbox rounds: the outcome was scripted, not drawn from a hash chain' }),
  ),
};

/** Crash rounds also carry what the crash point is computed with, frozen when the round opened. */
export const crashRoundFields = {
  salt: Type.String({ description: 'Crash: the HMAC key, used as UTF-8 text (see docs/decisions.md, Provably fair)' }),
  house_edge_bp: Type.Integer({ description: 'Crash: the house edge in basis points (100 = 1%, RTP 99%)' }),
};

/** Stock Race rounds also carry what the race is run with, frozen when the round opened. */
export const stockRaceRoundFields = {
  symbols: Type.Array(Type.String(), { description: 'Stock Race: the stocks racing in this round' }),
  race_ms: Type.Integer({ description: 'Stock Race: length of the running phase (milliseconds)' }),
};
