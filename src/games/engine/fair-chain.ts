import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Clock } from '../../clock/clock';
import { generateChain, isGameHash, previousHash } from './hash-chain';
import { DomainError } from '../../errors/codes';
import type { Database, SqlExecutor } from '../../store/database';
import type { ChainRecord } from './chain';
import { chainRepository as chains } from './chain-repository';
import type { Game } from './round';
import { roundRepository } from './round-repository';

/**
 * Each game draws its round seeds from a pre-generated hash chain played in reverse: the seed_hash
 * published when a round opens is sha256(seed), which is also the seed the previous round of that
 * chain revealed, so every revealed seed proves the commitment made for it and all rounds before it.
 *
 * The order of events is what makes a chain fair (bustabit's seeding event): the chain's
 * commitment (sha256 of the hex text of the first seed played) is published first; only then is
 * the salt fixed, from a contribution made after the commitment was public, as
 * salt = sha256(commitment + ":" + contribution); only then may rounds be played. Whoever runs the
 * service cannot generate many chains and keep a favourable one, because the outcome of every round
 * depends on a salt nobody knew while the chain could still be chosen.
 */
export interface ChainSeed {
  chainId: string;
  idx: number;
  seed: string;
  seedHash: string;
  /** The chain's salt; null only for a test fixture chain that plays unsalted (legacy) outcomes. */
  salt: string | null;
}

export type ChainStatus = 'awaiting_contribution' | 'playable' | 'refused';

/** Printable ASCII only: the contribution's bytes are then the same in every encoding a verifier may use. */
export const CONTRIBUTION_PATTERN = /^[\x20-\x7e]{1,256}$/;
const CONTRIBUTOR_PATTERN = /^[\x20-\x7e]{1,64}$/;

/** The salt a contribution fixes: sha256 of the UTF-8 text `<commitment>:<contribution>`, as 64 hex digits. */
export function deriveSalt(commitment: string, contribution: string): string {
  return sha256Hex(`${commitment}:${contribution}`);
}

/**
 * Why a chain may not be played, or null when it may. A salt must exist, be fixed no earlier than the
 * commitment was published, and be exactly what the recorded contribution derives; a fixture chain
 * (seeds a test wrote in directly) plays only where fixtures are allowed.
 */
export function refusalOf(record: ChainRecord, allowFixtures: boolean): string | null {
  if (record.origin === 'fixture') {
    return allowFixtures ? null : `chain ${record.chainId} is a test fixture; fixtures play only with APP_ENV=test`;
  }
  const chain = `chain ${record.chainId}`;
  if (record.salt === null || record.saltFixedAt === null || record.contribution === null) {
    return `${chain} has no salt yet: it waits for a contribution made after its commitment was published`;
  }
  if (record.saltFixedAt < record.committedAt) {
    return `${chain} had its salt fixed before its commitment was published; it can never be played`;
  }
  if (deriveSalt(record.commitment, record.contribution) !== record.salt) {
    return `${chain} has a salt that its commitment and contribution do not derive; it can never be played`;
  }
  return null;
}

/**
 * Why the seed at `idx` may not be played, or null when it may: in a generated chain it must hash (one
 * step, like every link) to the seed stored before it, or for index 0 to the published commitment. A seed
 * that does not would be revealed as not in the chain only after its round was played; checking it
 * before play costs one hash. A fixture's seeds form no chain (a test wrote them in), so none is checked.
 */
export async function linkRefusal(
  db: SqlExecutor,
  record: ChainRecord,
  idx: number,
  seed: string | undefined,
): Promise<string | null> {
  if (record.origin !== 'generated') return null;
  const chain = `chain ${record.chainId}`;
  if (seed === undefined || !isGameHash(seed)) return `${chain} has no valid seed at index ${idx}`;
  const before = idx === 0 ? record.commitment : await chains.seedAt(db, record.game, record.chainId, idx - 1);
  if (before !== undefined && previousHash(seed) === before) return null;
  const what = idx === 0 ? 'the published commitment' : `the seed at index ${idx - 1}`;
  return `${chain} has a seed at index ${idx} that does not link to ${what}; it can never be played`;
}

export interface RevealedSeed {
  idx: number;
  roundId: string;
  seed: string;
  /** The seed hashed forward idx + 1 times (sha256 of the hex text each step) gives the commitment. */
  verified: boolean;
}

/**
 * Checks every revealed seed against the commitment in one pass over the chain: a seed at index i
 * is verified when hashing it forward (i - j) times gives the verified seed at the nearest lower
 * index j (or, hashing i + 1 times, the commitment). Cost: one hash per index up to the highest.
 */
export function verifyRevealed(
  commitment: string,
  revealed: readonly { idx: number; roundId: string; seed: string }[],
): RevealedSeed[] {
  const sorted = [...revealed].sort((a, b) => a.idx - b.idx);
  let anchor = { idx: -1, value: commitment };
  return sorted.map((r) => {
    let verified = false;
    if (isGameHash(r.seed) && r.idx > anchor.idx) {
      let h = r.seed;
      for (let step = r.idx - anchor.idx; step > 0; step--) h = previousHash(h);
      verified = h === anchor.value;
    }
    if (verified) anchor = { idx: r.idx, value: r.seed };
    return { ...r, verified };
  });
}

export interface FairChainOptions {
  clock: Clock;
  logger: Logger;
  /** Development and test: the service contributes the salt itself right after publishing (flagged). */
  autoContribute: boolean;
  /** Test only: chains of seeds written in by a test may be played. */
  allowFixtures: boolean;
}

export class FairChainService {
  /** The last refusal logged per chain, so an engine waiting on a contribution logs it once, not every retry. */
  private readonly logged = new Map<string, string>();

  constructor(
    private readonly db: Database,
    private readonly lengthFor: (game: Game) => number,
    private readonly options: FairChainOptions,
  ) {}

  /**
   * Makes sure the game has a playable chain with seeds left. When the current one is used up, the
   * chain published ahead of it becomes current (or a new one is published). Returns false (after
   * logging why, once) when the chain is not playable yet: no salt (production waits for a
   * contribution) or a salt that breaks the rules. A refused chain is never silently replaced by a
   * fresh one: discarding chains is what the record exists to rule out.
   */
  async ensureChain(game: Game): Promise<boolean> {
    const cursor = await chains.cursor(this.db, game);
    const seedsLeft = cursor ? cursor.length - cursor.nextIdx : 0;
    let record = cursor && seedsLeft > 0 ? await this.record(cursor.chainId) : null;
    if (cursor && seedsLeft > 0 && !record) {
      this.options.logger.warn(
        { game, chain: cursor.chainId },
        'the current hash chain has no public commitment record; publishing a new chain instead',
      );
    }
    if (!record) {
      const queued = await this.queued(game, cursor?.chainId ?? null);
      record = queued ? await this.makeCurrent(queued) : await this.publishChain(game, { current: true });
    }
    record = await this.autoContribute(record);
    const nextIdx = record.chainId === cursor?.chainId ? cursor.nextIdx : 0;
    const refusal =
      refusalOf(record, this.options.allowFixtures) ??
      (await linkRefusal(this.db, record, nextIdx, await chains.seedAt(this.db, game, record.chainId, nextIdx)));
    if (refusal === null) {
      this.logged.delete(record.chainId);
      await this.publishAheadIfLow(game, record, record.chainId === cursor?.chainId ? seedsLeft : record.length);
      return true;
    }
    if (this.logged.get(record.chainId) !== refusal) {
      this.logged.set(record.chainId, refusal);
      const log =
        record.salt === null
          ? this.options.logger.warn.bind(this.options.logger)
          : this.options.logger.error.bind(this.options.logger);
      log(
        { game, chain: record.chainId, commitment: record.commitment },
        `refusing to play: ${refusal}` +
          (record.salt === null
            ? ` (contribute with: npm run admin -- fairness contribute --chain ${record.chainId} --value <text>)`
            : ''),
      );
    }
    return false;
  }

  /**
   * Once a tenth of the current chain is left, the next chain's commitment is published, so that in
   * production a contribution can arrive before play would have to wait for one.
   */
  private async publishAheadIfLow(game: Game, current: ChainRecord, seedsLeft: number): Promise<void> {
    if (current.origin !== 'generated' || seedsLeft > Math.max(1, Math.floor(current.length / 10))) return;
    if (await this.queued(game, current.chainId)) return;
    await this.autoContribute(await this.publishChain(game, { current: false }));
  }

  private async autoContribute(record: ChainRecord): Promise<ChainRecord> {
    if (record.salt !== null || record.origin !== 'generated' || !this.options.autoContribute) return record;
    return this.contribute(record.chainId, {
      contributor: 'service (automatic, development/test only)',
      value: randomBytes(32).toString('hex'),
      automatic: true,
    });
  }

  /** The oldest chain published ahead of the current one and never played, if any. */
  private async queued(game: Game, currentChainId: string | null): Promise<ChainRecord | null> {
    return chains.oldestUnplayed(this.db, game, currentChainId);
  }

  private async makeCurrent(record: ChainRecord): Promise<ChainRecord> {
    await this.db.transaction((tx) => chains.setCursor(tx, record.game, record.chainId, record.length));
    this.options.logger.info(
      { game: record.game, chain: record.chainId },
      'moved on to the hash chain published ahead',
    );
    return record;
  }

  /**
   * Generates a chain and publishes its record (commitment and time) in one transaction; no salt yet.
   * `current`: play from it now (the cursor moves to it), or keep it queued behind the current one.
   */
  private async publishChain(game: Game, placement: { current: boolean }): Promise<ChainRecord> {
    const length = this.lengthFor(game);
    const chainId = `chain_${randomUUID()}`;
    const hashes = generateChain(randomBytes(32).toString('hex'), length);
    const commitment = previousHash(hashes[0]!);
    const now = this.options.clock.now();
    await this.db.transaction(async (tx) => {
      await chains.insertSeeds(tx, game, chainId, hashes);
      await chains.insertRecord(tx, { chainId, game, length, commitment, committedAt: now });
      if (placement.current) await chains.setCursor(tx, game, chainId, length);
    });
    this.options.logger.info(
      { game, chain: chainId, commitment, length },
      'published the commitment of a new hash chain',
    );
    return (await this.record(chainId))!;
  }

  /**
   * Fixes a chain's salt from a contribution. The first contribution after the commitment wins and
   * the salt never changes afterwards, so no one (the service included) can try several and keep one.
   */
  async contribute(
    chainId: string,
    input: { contributor: string; value: string; automatic?: boolean },
  ): Promise<ChainRecord> {
    if (!CONTRIBUTION_PATTERN.test(input.value)) {
      throw new DomainError('VALIDATION_FAILED', 'the contribution must be 1 to 256 printable ASCII characters');
    }
    if (!CONTRIBUTOR_PATTERN.test(input.contributor)) {
      throw new DomainError('VALIDATION_FAILED', 'the contributor must be 1 to 64 printable ASCII characters');
    }
    const record = await this.record(chainId);
    if (!record) throw new DomainError('NOT_FOUND', `no hash chain ${chainId}`);
    if (record.origin !== 'generated') {
      throw new DomainError('ILLEGAL_TRANSITION', `chain ${chainId} is a test fixture and takes no contribution`);
    }
    if (record.salt !== null) {
      throw new DomainError(
        'ILLEGAL_TRANSITION',
        `chain ${chainId} already has its salt (fixed at ${record.saltFixedAt})`,
      );
    }
    // The salt hashes the commitment, so it cannot predate it whatever the clocks say; an instance
    // whose clock runs behind the one that published must not record an impossible order.
    const now = Math.max(this.options.clock.now(), record.committedAt);
    const salt = deriveSalt(record.commitment, input.value);
    const contribution = {
      contribution: input.value,
      contributor: input.contributor,
      automatic: Boolean(input.automatic),
      salt,
      at: now,
    };
    const fixed = await this.db.transaction((tx) => chains.fixSalt(tx, chainId, contribution));
    if (!fixed) throw new DomainError('ILLEGAL_TRANSITION', `chain ${chainId} already has its salt`);
    this.options.logger.info(
      { chain: chainId, contributor: input.contributor, automatic: Boolean(input.automatic), salt },
      'fixed the salt of a hash chain',
    );
    return (await this.record(chainId))!;
  }

  /** Takes the next seed inside the transaction that opens the round, so no seed is used twice. */
  async takeSeed(tx: SqlExecutor, game: Game): Promise<ChainSeed> {
    const cursor = await chains.cursor(tx, game);
    if (!cursor || cursor.nextIdx >= cursor.length) {
      throw new Error(`the ${game} hash chain is exhausted; ensureChain must run first`);
    }
    const record = await chains.record(tx, cursor.chainId);
    if (!record) throw new Error(`hash chain ${cursor.chainId} has no public record; it cannot be played`);
    const refusal = refusalOf(record, this.options.allowFixtures);
    if (refusal !== null) throw new Error(`refusing to play: ${refusal}`);
    const idx = cursor.nextIdx;
    const seed = await chains.seedAt(tx, game, cursor.chainId, idx);
    if (seed === undefined) throw new Error(`hash chain ${cursor.chainId} has no entry ${idx}`);
    // ensureChain checked this link already; checked again in the transaction that plays the seed.
    const broken = await linkRefusal(tx, record, idx, seed);
    if (broken !== null) throw new Error(`refusing to play: ${broken}`);
    if (!(await chains.advanceCursor(tx, game, idx))) throw new Error('hash chain cursor moved concurrently');
    // Never before the salt was fixed, even on an instance whose clock lags the one that fixed it: the
    // verifier checks that the chain was first played after its salt was fixed.
    const playedAt = Math.max(this.options.clock.now(), record.saltFixedAt ?? 0);
    if (record.firstPlayedIdx === null) await chains.markFirstPlayed(tx, record.chainId, idx, playedAt);
    return { chainId: cursor.chainId, idx, seed, seedHash: sha256Hex(seed), salt: record.salt };
  }

  async remaining(game: Game): Promise<number> {
    const c = await chains.cursor(this.db, game);
    return c ? c.length - c.nextIdx : 0;
  }

  async record(chainId: string): Promise<ChainRecord | null> {
    return chains.record(this.db, chainId);
  }

  /** Newest first. */
  async list(game?: Game): Promise<ChainRecord[]> {
    return chains.list(this.db, game);
  }

  /**
   * The same list as pages (the public fairness API): `limit` records after the chain named by
   * `startingAfter`, and whether another page follows. One row past the page is read, so `hasMore` is
   * exact without a count.
   */
  async page(q: {
    game?: Game;
    limit: number;
    startingAfter?: string;
  }): Promise<{ chains: ChainRecord[]; hasMore: boolean }> {
    let after: { committedAt: number; chainId: string } | undefined;
    if (q.startingAfter !== undefined) {
      const last = await chains.record(this.db, q.startingAfter);
      if (!last || (q.game !== undefined && last.game !== q.game)) {
        // The wording every list of the API gives for a cursor it cannot continue from (docs/decisions.md,
        // Lists). The list is public, so its scope is the game filter rather than an operator.
        const scope = q.game === undefined ? '' : ` of game ${q.game}`;
        throw new DomainError(
          'VALIDATION_FAILED',
          `starting_after: no chain ${q.startingAfter}${scope} (give the last chain_id of a page)`,
        );
      }
      after = { committedAt: last.committedAt, chainId: last.chainId };
    }
    const rows = await chains.page(this.db, { game: q.game, after, limit: q.limit + 1 });
    return { chains: rows.slice(0, q.limit), hasMore: rows.length > q.limit };
  }

  statusOf(record: ChainRecord): ChainStatus {
    if (record.origin === 'generated' && record.salt === null) return 'awaiting_contribution';
    return refusalOf(record, this.options.allowFixtures) === null ? 'playable' : 'refused';
  }

  /** Every seed the chain has revealed (closed or voided rounds), each checked against the commitment. */
  async revealed(record: ChainRecord): Promise<RevealedSeed[]> {
    return verifyRevealed(record.commitment, await roundRepository.revealedSeeds(this.db, record.chainId));
  }
}

/** The commitment published for a seed: sha256 of its hex text, the same link the chain uses. */
export const sha256Hex = (text: string): string => createHash('sha256').update(text).digest('hex');
