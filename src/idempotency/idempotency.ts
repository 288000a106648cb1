import canonicalize from 'canonicalize';
import { createHash } from 'node:crypto';
import { DomainError, isDomainError } from '../errors/codes';
import type { CommandAnswer, KeyClaim } from './idempotency-repository';
import type { Database, SqlExecutor, WriteTransaction } from '../store/database';
import { type KeyClaimRow, type KeyRow, idempotencyRepository } from './idempotency-repository';

export interface StoredResponse {
  statusCode: number;
  body: unknown;
}

export interface IdempotentResult extends StoredResponse {
  replayed: boolean;
}

export interface IdempotencyScope {
  operatorId: string;
  key: string;
  /** The route the key was used on: the same key on another route is a different request. */
  route: string;
  body: unknown;
  /**
   * The request's accepted signature (operator-scoped), recorded on the key row: the same signed
   * bytes under another key are refused with REQUEST_REPLAYED (a captured request replayed).
   */
  signature?: string;
}

// What a keyed write hands its service: the surfaces name it from here, never from the store.
export type { WriteTransaction } from '../store/database';

export const MAX_KEY_LENGTH = 255;

/** Seals a stored answer that holds a secret (a webhook endpoint's), so the key row never keeps it in clear. */
export interface AnswerSealer {
  seal(plaintext: string): string;
  open(sealed: string): string;
}

// A sealed answer starts with its format's version; JSON text never starts with a letter "v".
const SEALED_PREFIX = 'v1.';

/** Thrown through a keyed write's transaction when its key already has an answer: nothing is written. */
const ANSWERED = Symbol('the key already has an answer');

/**
 * RFC 8785 canonical JSON, hashed with the route: a reordered or reformatted body with the same
 * content is the same request; anything else under the same key is a conflict.
 */
export function requestHash(route: string, body: unknown): string {
  return createHash('sha256')
    .update(route)
    .update('\n')
    .update(canonicalize(body ?? null) ?? 'null')
    .digest('hex');
}

/** Failures about the key itself, or a replay: never stored as the key's answer. */
const NOT_STORED: ReadonlySet<string> = new Set([
  'IDEMPOTENCY_KEY_REUSED',
  'IDEMPOTENCY_KEY_IN_FLIGHT',
  'REQUEST_REPLAYED',
]);

const replayedUnderAnotherKey = () =>
  new DomainError(
    'REQUEST_REPLAYED',
    'this signed request was already received under another Idempotency-Key; sign each new request afresh',
  );

/**
 * Exactly-once monetary writes. The key row is inserted first in the same transaction as the side
 * effect and completed with the response before COMMIT, so:
 * - a retry after success finds the stored response and replays it without running anything;
 * - a concurrent duplicate in this process waits for the first one (in-flight map) and replays it;
 * - a concurrent duplicate on another instance blocks on the key's unique index until the first
 *   commits (PostgreSQL), then replays it; if the first rolled back, it runs instead.
 * Domain refusals (betting closed, say) are stored too, so a retry cannot turn into a different bet
 * in a later round.
 */
export class IdempotencyService {
  private readonly inFlight = new Map<string, Promise<IdempotentResult>>();

  constructor(
    private readonly db: Database,
    private readonly now: () => number,
    private readonly sealer?: AnswerSealer,
  ) {}

  /**
   * A write that is not a bet command (creating a webhook endpoint, queueing sandbox outcomes) under
   * an Idempotency-Key. `call` runs the service method, which hands `inTx` its one transaction; the
   * key is claimed inside it, so the write and the claim commit together or not at all, and the
   * answer (`toResponse` of what the method returned) is stored on the key right after. Between those
   * two commits a retry is told the request is in flight; a process that dies there leaves the key
   * answering that until it is purged, and the write happened once. The key's answer is looked up
   * first, so a retry replays it even when preparing the write again would now fail (the endpoint
   * since deleted, say). What the service refuses before its transaction (validation, a URL check)
   * is not stored, as nothing began; a refusal inside it is. `sealed` stores the answer sealed, for
   * answers that carry a secret.
   */
  async keyedWrite<T>(
    scope: IdempotencyScope,
    call: (inTx: WriteTransaction) => Promise<T>,
    toResponse: (result: T) => StoredResponse,
    present: (error: DomainError) => StoredResponse,
    options: { sealed?: boolean } = {},
  ): Promise<IdempotentResult> {
    const hash = this.hashOf(scope);
    const encode = (response: StoredResponse): string => this.encode(response, options.sealed === true);
    return this.singleFlight(scope, hash, async () => {
      const earlier = await this.lookup(scope);
      if (earlier) return this.fromRow(earlier, hash);
      let began = false;
      let committed = false;
      let stored: IdempotentResult | undefined;
      const inTx: WriteTransaction = async (work) => {
        if (began) throw new Error('a keyed write runs exactly one transaction');
        began = true;
        const result = await this.db.transaction(async (tx) => {
          const claimed = await idempotencyRepository.claim(tx, this.claimRow(scope, hash));
          if (claimed.changes === 0) {
            // Answered meanwhile (another instance, a concurrent retry): replay it, write nothing.
            const row = await idempotencyRepository.byKey(tx, scope.operatorId, scope.key);
            if (!row) throw replayedUnderAnotherKey();
            stored = this.fromRow(row, hash);
            throw ANSWERED;
          }
          return work(tx);
        });
        committed = true;
        return result;
      };
      let response: StoredResponse;
      try {
        response = toResponse(await call(inTx));
      } catch (error) {
        if (error === ANSWERED && stored) return stored;
        if (!began || !isDomainError(error) || NOT_STORED.has(error.code)) throw error;
        response = present(error);
        // Refused inside the transaction: nothing was written and the key is free; store the refusal.
        if (!committed) return this.storeAnswer(scope, hash, response, encode);
      }
      if (!committed) return this.storeAnswer(scope, hash, response, encode);
      await this.db.transaction((tx) =>
        idempotencyRepository.complete(tx, scope.operatorId, scope.key, response.statusCode, encode(response)),
      );
      return { statusCode: response.statusCode, body: response.body, replayed: false };
    });
  }

  /** Stores an answer reached outside the key's transaction, unless the key got one first; returns the key's. */
  private async storeAnswer(
    scope: IdempotencyScope,
    hash: string,
    response: StoredResponse,
    encode: (response: StoredResponse) => string,
  ): Promise<IdempotentResult> {
    const claimed = await this.db.transaction((tx) =>
      idempotencyRepository.claimAnswered(tx, this.claimRow(scope, hash), response.statusCode, encode(response)),
    );
    if (claimed.changes === 1) return { statusCode: response.statusCode, body: response.body, replayed: false };
    const row = await this.lookup(scope);
    if (!row) throw replayedUnderAnotherKey();
    return this.fromRow(row, hash);
  }

  private encode(response: StoredResponse, sealed: boolean): string {
    const text = JSON.stringify(response.body);
    if (!sealed) return text;
    if (!this.sealer) throw new Error('a sealed answer needs the service built with a sealer');
    return this.sealer.seal(text);
  }

  async execute(
    scope: IdempotencyScope,
    present: (error: DomainError) => StoredResponse,
    effect: (tx: SqlExecutor) => Promise<StoredResponse>,
  ): Promise<IdempotentResult> {
    const hash = this.hashOf(scope);
    return this.singleFlight(scope, hash, () => this.run(scope, hash, present, effect));
  }

  /**
   * A command that claims its key in the same single unit as its effect (`unit`: a synchronous
   * SQLite unit or one PostgreSQL statement). A conflict on the key is answered here as `execute`
   * answers it; when the unit wrote nothing and asks for the full path, `effect` runs as `execute`
   * would run it.
   */
  async command(
    scope: IdempotencyScope,
    unit: (claim: KeyClaim) => Promise<CommandAnswer>,
    present: (error: DomainError) => StoredResponse,
    effect: (tx: SqlExecutor) => Promise<StoredResponse>,
  ): Promise<IdempotentResult> {
    const hash = this.hashOf(scope);
    return this.singleFlight(scope, hash, async () => {
      const claim: KeyClaim = {
        operatorId: scope.operatorId,
        key: scope.key,
        requestHash: hash,
        signature: scope.signature ?? null,
        now: this.now(),
      };
      const answer = await unit(claim);
      // Written out rather than `{ ...answer, replayed }`: a spread followed by more properties is a
      // slow path on Node 20, and every money command passes here.
      if (!('outcome' in answer)) return { statusCode: answer.statusCode, body: answer.body, replayed: false };
      if (answer.outcome === 'existing') {
        await this.noteSignature(scope, hash);
        return this.fromRow(answer, hash);
      }
      // A signature already recorded: a replay, unless these very bytes were refused before they
      // claimed their key (a resend after a 429), which the full path tells apart.
      return this.run(scope, hash, present, effect);
    });
  }

  private hashOf(scope: IdempotencyScope): string {
    if (scope.key.length === 0 || scope.key.length > MAX_KEY_LENGTH) {
      throw new DomainError('VALIDATION_FAILED', `idempotency key must be 1 to ${MAX_KEY_LENGTH} characters`);
    }
    return requestHash(scope.route, scope.body);
  }

  /** A concurrent duplicate in this process waits for the first and replays what it stored. */
  private async singleFlight(
    scope: IdempotencyScope,
    hash: string,
    run: () => Promise<IdempotentResult>,
  ): Promise<IdempotentResult> {
    const flightKey = `${scope.operatorId}\u0000${scope.key}`;
    const pending = this.inFlight.get(flightKey);
    if (pending) {
      await pending.catch(() => undefined);
      return this.replay(scope, hash);
    }
    const running = run();
    this.inFlight.set(flightKey, running);
    try {
      return await running;
    } finally {
      this.inFlight.delete(flightKey);
    }
  }

  private async run(
    scope: IdempotencyScope,
    hash: string,
    present: (error: DomainError) => StoredResponse,
    effect: (tx: SqlExecutor) => Promise<StoredResponse>,
  ): Promise<IdempotentResult> {
    // No lookup before the transaction: claiming the key inside it finds any earlier use anyway, and
    // a new key (the common case) then costs no extra read.
    let earlier: KeyRow | undefined;
    try {
      const result = await this.db.transaction(async (tx): Promise<IdempotentResult | undefined> => {
        let claimed = await idempotencyRepository.claim(tx, this.claimRow(scope, hash));
        if (claimed.changes === 0 && scope.signature !== undefined) {
          const refusal = { operatorId: scope.operatorId, key: scope.key, signature: scope.signature };
          // The same bytes under the same key, refused before they claimed it (a 429): the request
          // again, not a replay; its refusal record goes and the key is claimed now.
          if ((await idempotencyRepository.releaseRefusal(tx, refusal)).changes === 1) {
            claimed = await idempotencyRepository.claim(tx, this.claimRow(scope, hash));
          }
        }
        if (claimed.changes === 0) {
          earlier = await idempotencyRepository.byKey(tx, scope.operatorId, scope.key);
          // No row under this key: the conflict was on the signature, already recorded under another key.
          if (!earlier) throw replayedUnderAnotherKey();
          // Answered from the row below (outside: a refusal thrown here would roll the record back).
          if (scope.signature !== undefined) await idempotencyRepository.noteSignature(tx, this.claimRow(scope, hash));
          return undefined;
        }
        const response = await effect(tx);
        await this.complete(tx, scope, response);
        return { statusCode: response.statusCode, body: response.body, replayed: false };
      });
      if (result) return result;
    } catch (error) {
      if (!isDomainError(error) || NOT_STORED.has(error.code)) throw error;
      // The effect refused: nothing changed. Remember the refusal under the key, unless a
      // concurrent request already stored something for it.
      const response = present(error);
      await this.db.transaction(async (tx) => {
        // The signature is recorded with the refusal too: replayed under a new key, the same bytes
        // must not get a second chance (in a later round, say).
        const r = await idempotencyRepository.claimAnswered(
          tx,
          this.claimRow(scope, hash),
          response.statusCode,
          JSON.stringify(response.body),
        );
        // Another request stored its answer first: this one is answered from it, its signature unrecorded.
        if (r.changes === 0 && scope.signature !== undefined) {
          await idempotencyRepository.noteSignature(tx, this.claimRow(scope, hash));
        }
        return r.changes;
      });
      return this.replayAfterRefusal(scope, hash, response);
    }
    return this.fromRow(earlier!, hash);
  }

  private async replayAfterRefusal(
    scope: IdempotencyScope,
    hash: string,
    response: StoredResponse,
  ): Promise<IdempotentResult> {
    const row = await this.lookup(scope);
    if (
      row &&
      row.response !== null &&
      (row.status_code !== response.statusCode || row.response !== JSON.stringify(response.body))
    ) {
      return this.fromRow(row, hash);
    }
    return { statusCode: response.statusCode, body: response.body, replayed: false };
  }

  private async replay(scope: IdempotencyScope, hash: string): Promise<IdempotentResult> {
    await this.noteSignature(scope, hash);
    const row = await this.lookup(scope);
    if (!row) {
      throw new DomainError(
        'IDEMPOTENCY_KEY_IN_FLIGHT',
        'a request with this idempotency key is still being processed; retry shortly',
      );
    }
    return this.fromRow(row, hash);
  }

  /**
   * A signed request answered from a key it did not claim (an idempotent retry signed afresh, a
   * duplicate that waited, a reuse refused) had its signature recorded by no claim: it is recorded now,
   * before the answer, so its bytes captured and sent under another key are REQUEST_REPLAYED, never a
   * second bet. Only retries pay this write; a first request records its signature with its claim.
   */
  private async noteSignature(scope: IdempotencyScope, hash: string): Promise<void> {
    if (scope.signature === undefined) return;
    await this.db.transaction((tx) => idempotencyRepository.noteSignature(tx, this.claimRow(scope, hash)));
  }

  /**
   * A signed request refused after its signature was checked and before it reached its key (rate
   * limited, operator disabled): its bytes must not be taken later under another key.
   */
  async noteRefused(operatorId: string, key: string, signature: string): Promise<void> {
    const createdAt = this.now();
    await this.db.transaction((tx) => idempotencyRepository.noteRefusal(tx, { operatorId, key, signature, createdAt }));
  }

  private lookup(scope: IdempotencyScope): Promise<KeyRow | undefined> {
    return idempotencyRepository.byKey(this.db, scope.operatorId, scope.key);
  }

  private claimRow(scope: IdempotencyScope, hash: string): KeyClaimRow {
    return {
      operatorId: scope.operatorId,
      key: scope.key,
      requestHash: hash,
      signature: scope.signature ?? null,
      createdAt: this.now(),
    };
  }

  private fromRow(row: KeyRow, hash: string): IdempotentResult {
    if (row.request_hash !== hash) {
      throw new DomainError('IDEMPOTENCY_KEY_REUSED', 'idempotency key reused with different body');
    }
    if (row.status_code === null || row.response === null) {
      throw new DomainError(
        'IDEMPOTENCY_KEY_IN_FLIGHT',
        'a request with this idempotency key is still being processed; retry shortly',
      );
    }
    const text = this.sealer && row.response.startsWith(SEALED_PREFIX) ? this.sealer.open(row.response) : row.response;
    return { statusCode: Number(row.status_code), body: JSON.parse(text), replayed: true };
  }

  private async complete(tx: SqlExecutor, scope: IdempotencyScope, response: StoredResponse): Promise<void> {
    await idempotencyRepository.complete(
      tx,
      scope.operatorId,
      scope.key,
      response.statusCode,
      JSON.stringify(response.body),
    );
  }

  /** Forgets keys older than the retention period (at least 24 h, see config). */
  async purge(olderThan: number): Promise<number> {
    const r = await this.db.transaction((tx) => idempotencyRepository.purge(tx, olderThan));
    return r.changes;
  }
}
