// Recomputes a round from what the service revealed, with nothing but WebCrypto (SubtleCrypto): the
// same file runs in the player's browser and in `npm run verify` (Node 20's globalThis.crypto), and it
// shares no code with the server, so a fault in the server's own computation cannot hide here.
//
// Encodings (docs/fairness.md):
// - chain link: sha256 of the 64-character lowercase hex TEXT of a seed, as hex text again;
// - salt: sha256 of the UTF-8 text `<commitment>:<contribution>`, hex;
// - Crash random: HMAC-SHA256(key = the salt's TEXT, message = the seed's 32 BYTES), first 52 bits;
// - Stock Race key: the same HMAC as hex; per symbol HMAC-SHA256(key = the key's 32 BYTES, message = symbol).

const subtle = globalThis.crypto.subtle;
const encoder = new TextEncoder();
const HEX64 = /^[0-9a-f]{64}$/;
const TWO_POW_52 = 2n ** 52n;
const CRASH_OUTCOME = 'the crash point played is the one the seed and salt give';
const RACE_OUTCOME = 'the winner played is the one the seed and salt give';

const toHex = (buffer) => Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, '0')).join('');

export function hexToBytes(hex) {
  if (!/^(?:[0-9a-fA-F]{2})*$/.test(hex)) throw new Error('not an even-length hex string');
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export async function sha256HexOfText(text) {
  return toHex(await subtle.digest('SHA-256', encoder.encode(text)));
}

export async function hmacSha256Hex(keyBytes, messageBytes) {
  const key = await subtle.importKey('raw', keyBytes, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return toHex(await subtle.sign('HMAC', key, messageBytes));
}

/** The seed hashed forward `steps` times; from index i, i + 1 steps reach the chain's commitment. */
/**
 * A round's chain in the public record (GET /fairness/chains?game=…), newest first, following its pages
 * (`has_more`, `starting_after`) until the chain is found or the record ends: past one page of chains an
 * older round's chain is on a later page. `getJson(path)` fetches a path of the service as JSON.
 */
export async function findChain(getJson, game, chainId) {
  let path = `/fairness/chains?game=${encodeURIComponent(game)}`;
  for (;;) {
    const page = await getJson(path);
    const found = page.chains.find((c) => c.chain_id === chainId);
    if (found) return found;
    const last = page.chains.at(-1);
    if (!page.has_more || !last) return null;
    path = `/fairness/chains?game=${encodeURIComponent(game)}&starting_after=${encodeURIComponent(last.chain_id)}`;
  }
}

export async function hashForward(seed, steps) {
  let h = seed;
  for (let i = 0; i < steps; i++) h = await sha256HexOfText(h);
  return h;
}

/** A time or index from the public record, or null when the record has none. */
const recorded = (value) => (typeof value === 'number' && Number.isFinite(value) ? value : null);

// What the server itself accepts. A value outside it cannot be what a round was played with, so the
// check that needs it fails; coercing it (Number(null) is 0, Number('2') is 2) could pass a wrong record.
const isIndex = (value) => Number.isSafeInteger(value) && value >= 0;
const isHouseEdge = (value) => Number.isInteger(value) && value >= 0 && value < 10000;
const SYMBOL = /^[A-Za-z0-9._-]{1,32}$/;
const isSymbolList = (value) =>
  Array.isArray(value) &&
  value.length >= 2 &&
  value.every((s) => typeof s === 'string' && SYMBOL.test(s)) &&
  new Set(value).size === value.length;

export const deriveSalt = (commitment, contribution) => sha256HexOfText(`${commitment}:${contribution}`);

/** Crash point in hundredths: max(100, floor((10000 - edge) * 2^52 / (100 * (2^52 - r)))), exact. */
export async function crashPoint(seed, salt, houseEdgeBp) {
  const digest = await hmacSha256Hex(encoder.encode(salt), hexToBytes(seed));
  const r = BigInt(`0x${digest.slice(0, 13)}`);
  const hundredths = ((10000n - BigInt(houseEdgeBp)) * TWO_POW_52) / (100n * (TWO_POW_52 - r));
  const capped = hundredths > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(hundredths);
  return Math.max(100, capped);
}

/** Stock Race: per symbol move = (first 52 bits mod 2001) - 1000; best move wins, ties to the larger digest. */
export async function stockRace(seed, salt, symbols) {
  const key = salt === null ? seed : await hmacSha256Hex(encoder.encode(salt), hexToBytes(seed));
  const keyBytes = hexToBytes(key);
  let best = null;
  const moves = [];
  for (const symbol of symbols) {
    const digest = await hmacSha256Hex(keyBytes, encoder.encode(symbol));
    const pctBp = Number(BigInt(`0x${digest.slice(0, 13)}`) % 2001n) - 1000;
    moves.push({ symbol, pct_bp: pctBp });
    if (best === null || pctBp > best.pct_bp || (pctBp === best.pct_bp && digest > best.digest))
      best = { symbol, pct_bp: pctBp, digest };
  }
  return { race_key: key, moves, winner: best.symbol, winner_pct_bp: best.pct_bp };
}

/**
 * Every check a player can make on a finished round, from the round's verify data (GET
 * /fairness/rounds/:id) and its chain's public record (GET /fairness/chains). `verified` is true only
 * when every check passes. Recomputing the outcome is not enough: a salt proves something only when
 * the record shows the order commitment, then contribution, then play, so a check that cannot be made
 * (a field missing from the record) fails rather than being skipped.
 */
export async function verifyRound(round, chain) {
  const checks = [];
  const check = (name, ok, detail) => checks.push({ name, ok: Boolean(ok), detail });
  const seed = String(round.seed ?? '');
  if (!HEX64.test(seed)) {
    check('the round revealed a seed', false, 'no 64-hex-digit seed in the response (is the round finished?)');
    return { verified: false, checks, recomputed: null };
  }
  check(
    'sha256(seed) is the seed_hash published when the round opened',
    (await sha256HexOfText(seed)) === round.seed_hash,
    round.seed_hash,
  );
  if (chain) {
    // A chain index that is not a whole number >= 0 names no seed of the chain: the link check fails.
    const steps = isIndex(round.chain_idx) ? round.chain_idx + 1 : null;
    const reached = steps === null ? null : await hashForward(seed, steps);
    check(
      steps === null
        ? "the seed hashed forward to the chain's published commitment"
        : `the seed hashed forward ${steps} time${steps === 1 ? '' : 's'} is the chain's published commitment`,
      reached !== null && reached === chain.commitment,
      steps === null ? `chain_idx ${JSON.stringify(round.chain_idx)} is not an index` : chain.commitment,
    );
    // Chains are per game: a round matched to the other game's chain says nothing of the chain it played.
    const games = `chain ${chain.game}, round ${round.game}`;
    check("the chain's game is the round's game", chain.game === round.game, games);
    // Only a chain the service generated gets its salt from a contribution made after the commitment; a
    // test fixture's salt is whatever the test (or a server lying about it) recorded, so it proves nothing.
    check(
      'the chain is a generated chain, not a test fixture whose salt no contribution fixed',
      chain.origin === 'generated',
      chain.origin === 'fixture'
        ? 'a test fixture: its salt was not fixed by a contribution, so its rounds are not provably fair'
        : `origin ${chain.origin}`,
    );
    const contributed = typeof chain.contribution === 'string';
    check(
      'the salt is sha256(commitment:contribution)',
      contributed && (await deriveSalt(chain.commitment, chain.contribution)) === round.salt,
      contributed ? round.salt : 'the chain has no contribution',
    );
    // Missing times must fail: Number(null) is 0, which would order any two absent times as "equal".
    // Equal times pass: the salt hashes the commitment, so it cannot predate it, and the service records
    // a contribution arriving on a clock behind the publisher's at the commitment's own time.
    const committedAt = recorded(chain.committed_at);
    const saltFixedAt = recorded(chain.salt_fixed_at);
    check(
      'the salt was fixed after the commitment was published',
      committedAt !== null && saltFixedAt !== null && saltFixedAt >= committedAt,
      `committed at ${committedAt}, salt fixed at ${saltFixedAt}`,
    );
    // The round's own opening time is not in its public verify data; the chain's first play is, and seeds
    // are played in index order, so a round at or above that index was played no earlier than it.
    const firstPlayedAt = recorded(chain.first_played_at);
    const firstPlayedIdx = recorded(chain.first_played_idx);
    check(
      'the round was played after the salt was fixed',
      saltFixedAt !== null &&
        firstPlayedAt !== null &&
        firstPlayedIdx !== null &&
        isIndex(round.chain_idx) &&
        round.chain_idx >= firstPlayedIdx &&
        firstPlayedAt >= saltFixedAt,
      `salt fixed at ${saltFixedAt}, chain first played at ${firstPlayedAt} from index ${firstPlayedIdx}`,
    );
  } else {
    check("the round's chain is in the public record", false, round.chain_id);
  }
  // A closed round always has an outcome; one missing from its record was not checked, so it fails. Only a
  // voided round (no outcome, every stake returned) is left to the seed checks above.
  const outcomeDue = round.status !== 'void' || (round.outcome !== null && round.outcome !== undefined);
  let recomputed = null;
  if (round.game === 'crash') {
    const edgeOk = isHouseEdge(round.house_edge_bp);
    const saltOk = typeof round.salt === 'string' && round.salt.length > 0;
    const point = edgeOk && saltOk ? await crashPoint(seed, round.salt, round.house_edge_bp) : null;
    recomputed = point === null ? null : { crash_point: point };
    if (outcomeDue) {
      let detail = point === null ? '' : `${(point / 100).toFixed(2)}x`;
      if (!edgeOk) detail = `house_edge_bp ${JSON.stringify(round.house_edge_bp)} is not 0 to 9999 basis points`;
      else if (!saltOk) detail = 'the round has no salt';
      else if (!round.outcome) detail += ', but the record shows no outcome';
      check(CRASH_OUTCOME, point !== null && round.outcome?.crash_point === point, detail);
    }
  } else if (round.game === 'stock_race') {
    // No salt: a round from before chains had one, raced on the seed itself (its salt check fails above).
    const salt = round.salt ?? null;
    const saltOk = salt === null || (typeof salt === 'string' && salt.length > 0);
    const race = isSymbolList(round.symbols) && saltOk ? await stockRace(seed, salt, round.symbols) : null;
    recomputed = race === null ? null : { winner: race.winner, winner_pct_bp: race.winner_pct_bp };
    if (outcomeDue) {
      const played = round.outcome;
      // Every stock's move is what a player was shown; a false loser's move would misstate the race.
      const sameMoves =
        race !== null &&
        Array.isArray(played?.moves) &&
        played.moves.length === race.moves.length &&
        race.moves.every((m, i) => played.moves[i]?.symbol === m.symbol && played.moves[i]?.pct_bp === m.pct_bp);
      let detail = race === null ? 'the round has no valid symbol list or salt' : race.winner;
      if (race !== null && !played) detail += ', but the record shows no outcome';
      check(
        RACE_OUTCOME,
        race !== null && sameMoves && played.winner === race.winner && played.winner_pct_bp === race.winner_pct_bp,
        detail,
      );
    }
  } else {
    check("the round's game is Crash or Stock Race", false, String(round.game));
  }
  return { verified: checks.every((c) => c.ok), checks, recomputed };
}
