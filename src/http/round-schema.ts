import { Type } from 'typebox';

/** The round fields both surfaces present (see src/rounds/round-presenter.ts). */
export const roundFields = {
  round_id: Type.String(),
  round_number: Type.Integer(),
  game: Type.String(),
  status: Type.String({ description: 'open | running | closed | void' }),
  seed_hash: Type.String({ description: 'sha256 of the seed, published when the round opens' }),
  seed: Type.Union([Type.String(), Type.Null()], { description: 'revealed once the round is closed or void' }),
  opened_at: Type.Integer(),
  betting_closes_at: Type.Integer(),
  running_at: Type.Union([Type.Integer(), Type.Null()]),
  closed_at: Type.Union([Type.Integer(), Type.Null()]),
  voided_at: Type.Union([Type.Integer(), Type.Null()]),
  void_reason: Type.Union([Type.String(), Type.Null()]),
  livemode: Type.Boolean({ description: 'false for a sandbox round of a test-mode operator (test data)' }),
  scripted: Type.Optional(
    Type.Boolean({ description: 'sandbox rounds: the outcome was scripted, not drawn from a hash chain' }),
  ),
};
