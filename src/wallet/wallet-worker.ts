import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { Clock } from '../clock/clock';
import type { OperatorCredentials } from '../operators/operator';
import {
  createOutboundAgent,
  DEFAULT_MAX_RESPONSE_BYTES,
  OutboundTimeoutError,
  postWithLimits,
  refuseTarget,
  ResponseTooLargeError,
} from '../outbound/outbound-http';
import { traced } from '../observability/outbound';
import { signRequest } from '../signing/request-signature';
import { scheduleBackoff } from '../outbox/backoff';
import { OutboxEngine, type AttemptResult as EngineAttemptResult, type OutboxSender } from '../outbox/engine';
import type { Database } from '../store/database';
import type { Resolver } from '../outbound/url-safety';
import { WalletSettlementOutbox } from './settlement-repository';
import type { AttemptResult, Settlement, SettlementClaim } from './settlements';

export interface WalletWorkerOptions {
  db: Database;
  clock: Clock;
  logger: Logger;
  credentialsOf: (operatorId: string) => Promise<OperatorCredentials>;
  retryScheduleMs: readonly number[];
  /** Deadline for a whole attempt: connect, headers and body. */
  timeoutMs: number;
  /** Development only: http and loopback/private wallet URLs, no connect-time address check. */
  allowPrivateTargets: boolean;
  /** A reply larger than this is not a confirmation (default 64 KiB); reading stops there. */
  maxResponseBytes?: number;
  /** Connect-time resolution; injectable so tests need no DNS. */
  resolve?: Resolver;
  pollIntervalMs: number;
  /**
   * Answers the settle calls of a test-mode operator that has no wallet_url (the sandbox's simulated
   * wallet): they are claimed, logged and retried exactly like calls to a real wallet.
   */
  simulatedWallet?: (settlement: Settlement) => Promise<Omit<AttemptResult, 'startedAt' | 'latencyMs'>>;
  /** Deliveries in flight at once (each waits on an operator's wallet, not on this process). */
  concurrency?: number;
  /** Deliveries in flight at once to one operator's wallet: a wallet that hangs holds only these. */
  concurrencyPerOperator?: number;
  /** Replaces the worker's own guarded agent (and with it the connect-time address check). */
  dispatcher?: Dispatcher;
}

export const SETTLE_PATH = '/v1/bets/settle';
const EXCERPT_CHARS = 500;

/**
 * The URL a settlement goes to: the operator's wallet base URL (which may carry a path) + /v1/bets/settle.
 * Appended to the path, not the text: a stored URL ending in a bare `?` would otherwise put the
 * settle path in the query string.
 */
export function settleUrl(walletUrl: string): string {
  const url = new URL(walletUrl);
  const query = url.search;
  url.search = '';
  url.pathname = `${url.pathname.replace(/\/+$/, '')}${SETTLE_PATH}`;
  url.search = query;
  return url.toString();
}

/**
 * Delivers the wallet settlement outbox on the shared outbox engine (src/outbox): claims due rows,
 * POSTs each signed with the Surface B scheme and the operator's current secret, and records every
 * attempt. A 2xx read whole within the deadline and the size cap is the only proof of delivery;
 * anything else (timeout, network error, 5xx, 4xx, an oversized reply, a refused target) leaves the
 * settlement pending for the next attempt with the same idempotency_key, on the retry schedule and
 * then at its last interval until the wallet confirms (never dead-lettered).
 */
export class WalletSettlementWorker {
  private readonly engine: OutboxEngine<SettlementClaim>;

  constructor(options: WalletWorkerOptions) {
    const concurrency = options.concurrency ?? 64;
    // Long enough to cover a whole attempt (the request times out first) plus recording it.
    const leaseMs = options.timeoutMs + 1_000;
    this.engine = new OutboxEngine({
      name: 'wallet settlement',
      logFields: (c) => ({ bet_id: c.id, operator_id: c.settlement.operatorId }),
      clock: options.clock,
      logger: options.logger,
      repository: new WalletSettlementOutbox(options.db, leaseMs),
      sender: new SettleCalls(options),
      backoff: scheduleBackoff(options.retryScheduleMs.length > 0 ? options.retryScheduleMs : [0], {
        attempts: 'unbounded',
      }),
      leaseMs,
      pollIntervalMs: options.pollIntervalMs,
      // A claim waits for this much room: smaller than the whole, so slots held by a hanging wallet do
      // not keep the others' settlements from being claimed.
      batchSize: Math.min(16, concurrency),
      maxInFlight: concurrency,
      maxInFlightPerTarget: Math.min(options.concurrencyPerOperator ?? 16, concurrency),
      releaseLeasesAtStart: options.db.dialect === 'sqlite',
    });
  }

  start(): Promise<void> {
    return this.engine.start();
  }

  /** Stops claiming; calls in flight finish and are recorded (by `deadline`, see OutboxEngine.stop). */
  stop(deadline: number | null = null): Promise<void> {
    return this.engine.stop(deadline);
  }

  /** One pass: claim what is due and attempt it, until nothing is due. Returns the number of attempts made. */
  runOnce(): Promise<number> {
    // Bounded so a schedule of zero delays cannot spin here; the next poll carries on.
    return this.engine.drain(50);
  }
}

/** One settle call: the operator's wallet (or the sandbox's simulated one), signed, with the stored body. */
class SettleCalls implements OutboxSender<SettlementClaim> {
  private readonly maxResponseBytes: number;
  private dispatcher: Dispatcher;

  constructor(private readonly options: WalletWorkerOptions) {
    this.maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    this.dispatcher = options.dispatcher ?? this.ownAgent();
  }

  private ownAgent(): Dispatcher {
    const { timeoutMs, allowPrivateTargets, resolve } = this.options;
    return createOutboundAgent({ timeoutMs, allowPrivateTargets, resolve });
  }

  async close(): Promise<void> {
    if (this.options.dispatcher) return;
    // Its keep-alive sockets go; a fresh agent (no sockets yet) serves a later start or runOnce.
    const closing = this.dispatcher;
    this.dispatcher = this.ownAgent();
    await closing.close().catch(() => {});
  }

  async send(claim: SettlementClaim): Promise<Omit<EngineAttemptResult, 'startedAt'>> {
    const settlement = claim.settlement;
    const t0 = performance.now();
    let result: Omit<AttemptResult, 'startedAt' | 'latencyMs'>;
    try {
      result = await this.attempt(settlement);
    } catch (error) {
      result = failedAttempt(error, this.options.timeoutMs);
    }
    const latencyMs = Math.round(performance.now() - t0);
    const status = result.statusCode;
    const log = {
      bet_id: settlement.betId,
      operator_id: settlement.operatorId,
      attempt: claim.attempt,
      status,
      ms: latencyMs,
    };
    if (result.delivered) this.options.logger.info(log, 'wallet settlement delivered');
    else this.options.logger.warn({ ...log, error: result.error }, 'wallet settlement not confirmed; will retry');
    const { delivered, statusCode, error, responseExcerpt } = result;
    // The wallet's Retry-After is not read: the settlement schedule alone decides.
    return { ok: delivered, statusCode, latencyMs, error, responseExcerpt, retryAfterMs: null };
  }

  private async attempt(settlement: Settlement): Promise<Omit<AttemptResult, 'startedAt' | 'latencyMs'>> {
    const operator = await this.options.credentialsOf(settlement.operatorId);
    if (!operator.walletUrl && operator.mode === 'test' && this.options.simulatedWallet)
      return this.options.simulatedWallet(settlement);
    if (!operator.walletUrl) {
      return {
        delivered: false,
        statusCode: null,
        error: 'the operator has no wallet_url configured',
        responseExcerpt: null,
      };
    }
    const url = new URL(settleUrl(operator.walletUrl));
    // Stored before the policy applied to wallet URLs, or changed behind the service's back.
    const refusal = refuseTarget(url, this.options.allowPrivateTargets);
    if (refusal) return { delivered: false, statusCode: null, error: refusal, responseExcerpt: null };
    const timestamp = String(this.options.clock.now());
    const signature = signRequest(operator.secrets[0]!, 'POST', url.pathname + url.search, timestamp, settlement.body);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'x-operator-key': operator.apiKey,
      'x-timestamp': timestamp,
      'x-signature': signature,
      'idempotency-key': settlement.idempotencyKey,
    };
    const res = await traced('wallet settle', url, headers, () =>
      postWithLimits(url, {
        headers,
        body: settlement.body,
        dispatcher: this.dispatcher,
        timeoutMs: this.options.timeoutMs,
        maxResponseBytes: this.maxResponseBytes,
      }),
    );
    const text = res.body.toString('utf8');
    const delivered = res.statusCode >= 200 && res.statusCode < 300;
    return {
      delivered,
      statusCode: res.statusCode,
      error: delivered ? null : `wallet answered ${res.statusCode}`,
      responseExcerpt: text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS)}…` : text,
    };
  }
}

function failedAttempt(error: unknown, timeoutMs: number): Omit<AttemptResult, 'startedAt' | 'latencyMs'> {
  const notDelivered = (statusCode: number | null, text: string) => ({
    delivered: false,
    statusCode,
    error: text.slice(0, EXCERPT_CHARS),
    responseExcerpt: null,
  });
  if (error instanceof OutboundTimeoutError) {
    return notDelivered(null, `no answer within ${timeoutMs} ms (outcome unknown)`);
  }
  if (error instanceof ResponseTooLargeError) {
    // Even a 2xx: a reply that cannot be read whole is not taken as the wallet's confirmation.
    return notDelivered(error.statusCode, `${error.message}: not taken as a confirmation`);
  }
  const e = error as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  const code = e?.code ?? e?.cause?.code;
  return notDelivered(null, `${code ? `${code}: ` : ''}${e?.cause?.message ?? e?.message ?? String(error)}`);
}
