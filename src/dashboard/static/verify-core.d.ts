// Types for verify-core.js, the browser-side verifier (plain JavaScript so it is served as is).
export interface VerifyCheck {
  name: string;
  ok: boolean;
  detail: string;
}
export interface VerifyResult {
  verified: boolean;
  checks: VerifyCheck[];
  recomputed: { crash_point: number } | { winner: string; winner_pct_bp: number } | null;
}
export function hexToBytes(hex: string): Uint8Array;
export function sha256HexOfText(text: string): Promise<string>;
export function hmacSha256Hex(keyBytes: Uint8Array, messageBytes: Uint8Array): Promise<string>;
export function hashForward(seed: string, steps: number): Promise<string>;
export function deriveSalt(commitment: string, contribution: string): Promise<string>;
export function crashPoint(seed: string, salt: string, houseEdgeBp: number): Promise<number>;
export function stockRace(
  seed: string,
  salt: string | null,
  symbols: readonly string[],
): Promise<{ race_key: string; moves: { symbol: string; pct_bp: number }[]; winner: string; winner_pct_bp: number }>;
/** The round's chain in GET /fairness/chains?game=…, following its pages; null when the record has none. */
export function findChain(
  getJson: (path: string) => Promise<{ chains: Record<string, unknown>[]; has_more?: boolean }>,
  game: string,
  chainId: string,
): Promise<Record<string, unknown> | null>;
/**
 * `round`: GET /fairness/rounds/:id. `chain`: its entry in GET /fairness/chains, of which it reads
 * `game`, `origin`, `commitment`, `committed_at`, `contribution`, `salt_fixed_at`, `first_played_idx`
 * and `first_played_at`; null when the record has no such chain.
 */
export function verifyRound(
  round: Record<string, unknown>,
  chain: Record<string, unknown> | null,
): Promise<VerifyResult>;
