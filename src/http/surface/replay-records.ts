import type { FastifyRequest } from 'fastify';
import type { OperatorCredentials } from '../../operators/operator';
import type { AuthDeps } from './surface';

const READS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);
const SEEN_HEX_LENGTH = 32;

/**
 * How a request's accepted signature is kept against replays (see `replay` on the route config):
 * not at all (reads, a key inside the signed body, a POST that only computes), on its idempotency
 * key's row, or as seen once.
 */
export function replayRecordOf(req: FastifyRequest): 'none' | 'on-key' | 'once' {
  if (READS.has(req.method)) return 'none';
  const mode = req.routeOptions.config?.replay;
  if (mode === 'signed-body' || mode === 'no-effect') return 'none';
  return mode === 'idempotency-key' ? 'on-key' : 'once';
}

/**
 * The record of a signature: the signed timestamp, then the signature's first 128 bits, lowercased
 * (the signature is compared as bytes, so its hex case must not make a new entry). Two different
 * requests share it with odds of 2^-128. Leading with the timestamp (near-monotonic within the
 * window) makes each insert land at the end of the index instead of on a random page.
 */
export function signatureRecord(timestamp: string, signature: string): string {
  return `${timestamp.padStart(15, '0')}.${signature.slice(0, SEEN_HEX_LENGTH).toLowerCase()}`;
}

/** Kept a little past the window so instances whose clocks differ slightly still agree. */
export function seenUntil(deps: AuthDeps, timestamp: string): number {
  return Number(timestamp) + deps.signatureToleranceMs + 60_000;
}

/**
 * Refuses a request whose signature was already checked (rate limited, operator disabled). The
 * bytes of a refused state-changing request must not be taken later: captured and sent again under
 * another Idempotency-Key, or once the bucket has refilled, they would do what the operator's own
 * retry does, a second time. A keyed route records the signature with the key it carried (the same
 * bytes under that key may still claim it: a resend after the 429); a route without a key marks it
 * seen. Recording is best effort: a store that fails it does not change the answer.
 */
export function refuseSigned(
  deps: AuthDeps,
  req: FastifyRequest,
  operator: OperatorCredentials,
  timestamp: string,
  signature: string,
  refusal: Error,
): Promise<void> {
  const record = replayRecordOf(req);
  if (record === 'none') return Promise.reject(refusal);
  const seen = signatureRecord(timestamp, signature);
  const key = req.headers['idempotency-key'];
  const recorded =
    record === 'on-key'
      ? deps.refusedSignatures.noteRefused(operator.id, typeof key === 'string' ? key : '', seen)
      : deps.seenSignatures.claim(seen, 'once', seenUntil(deps, timestamp));
  return recorded.then(
    () => Promise.reject(refusal),
    (err: unknown) => {
      req.log.warn({ err }, "could not record a refused request's signature");
      return Promise.reject(refusal);
    },
  );
}
