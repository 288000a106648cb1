import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { Clock, TimerHandle } from '../clock/clock';
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
import type { Database } from '../store/database';
import type { Resolver } from '../outbound/url-safety';
import { settlementRepository, type AttemptResult, type Settlement } from './settlements';

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
  simulatedWallet?: (s: Settlement) => Promise<Omit<AttemptResult, 'startedAt' | 'latencyMs'>>;
  /** Deliveries in flight at once (each waits on an operator's wallet, not on this process). */
  concurrency?: number;
  /** Replaces the worker's own guarded agent (and with it the connect-time address check). */
  dispatcher?: Dispatcher;
}

export const SETTLE_PATH = '/v1/bets/settle';
const EXCERPT_CHARS = 500;

/** The URL a settlement goes to: the operator's wallet base URL (which may carry a path) + /v1/bets/settle. */
export const settleUrl = (walletUrl: string): string => `${walletUrl.replace(/\/+$/, '')}${SETTLE_PATH}`;

/**
 * Delivers the wallet settlement outbox: claims due rows, POSTs each signed with the Surface B
 * scheme and the operator's current secret, and records every attempt. A 2xx read whole within the
 * deadline and the size cap is the only proof of delivery; anything else (timeout, network error,
 * 5xx, 4xx, an oversized reply, a refused target) leaves the settlement pending for the next attempt
 * with the same idempotency_key.
 */
export class WalletSettlementWorker {
  private timer: TimerHandle | null = null;
  private running: Promise<void> | null = null;
  private stopped = true;
  private readonly concurrency: number;
  private readonly leaseMs: number;
  private readonly maxResponseBytes: number;
  private dispatcher: Dispatcher;

  constructor(private readonly o: WalletWorkerOptions) {
    this.concurrency = o.concurrency ?? 16;
    // Long enough to cover a whole attempt (the request times out first) plus recording it.
    this.leaseMs = o.timeoutMs + 1_000;
    this.maxResponseBytes = o.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    this.dispatcher = o.dispatcher ?? this.ownAgent();
  }

  private ownAgent(): Dispatcher {
    const { timeoutMs, allowPrivateTargets, resolve } = this.o;
    return createOutboundAgent({ timeoutMs, allowPrivateTargets, resolve });
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = null;
    await this.running;
    if (!this.o.dispatcher) {
      // Its keep-alive sockets go; a fresh agent (no sockets yet) serves a later start or runOnce.
      await this.dispatcher.close().catch(() => {});
      this.dispatcher = this.ownAgent();
    }
  }

  /** One pass: claim what is due and attempt it. Returns the number of attempts made. */
  async runOnce(): Promise<number> {
    let total = 0;
    // Bounded so a schedule of zero delays cannot spin here; the next poll carries on.
    for (let pass = 0; pass < 50; pass++) {
      const batch = await settlementRepository.claimDue(this.o.db, this.o.clock.now(), this.leaseMs, this.concurrency);
      if (batch.length === 0) return total;
      await Promise.all(batch.map((s) => this.deliver(s)));
      total += batch.length;
      if (this.stopped || batch.length < this.concurrency) return total;
    }
    return total;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = this.o.clock.schedule(ms, () => {
      this.timer = null;
      this.running = this.runOnce()
        .then(() => undefined)
        .catch((err) => this.o.logger.warn({ err }, 'wallet settlement pass failed; will retry'))
        .finally(() => {
          this.running = null;
          this.schedule(this.o.pollIntervalMs);
        });
    });
  }

  private async deliver(s: Settlement): Promise<void> {
    const startedAt = this.o.clock.now();
    const t0 = performance.now();
    let result: Omit<AttemptResult, 'startedAt' | 'latencyMs'>;
    try {
      result = await this.attempt(s);
    } catch (error) {
      result = failedAttempt(error, this.o.timeoutMs);
    }
    const full: AttemptResult = { ...result, startedAt, latencyMs: Math.round(performance.now() - t0) };
    const log = { bet_id: s.betId, operator_id: s.operatorId, attempt: s.attempts + 1, status: full.statusCode, ms: full.latencyMs };
    if (full.delivered) this.o.logger.info(log, 'wallet settlement delivered');
    else this.o.logger.warn({ ...log, error: full.error }, 'wallet settlement not confirmed; will retry');
    try {
      await settlementRepository.recordAttempt(this.o.db, s, full, this.o.retryScheduleMs, this.o.clock.now());
    } catch (err) {
      // The claim runs out and the row is attempted again: the wallet deduplicates by idempotency_key.
      this.o.logger.error({ err, bet_id: s.betId }, 'could not record a wallet settlement attempt');
    }
  }

  private async attempt(s: Settlement): Promise<Omit<AttemptResult, 'startedAt' | 'latencyMs'>> {
    const operator = await this.o.credentialsOf(s.operatorId);
    if (!operator.walletUrl && operator.mode === 'test' && this.o.simulatedWallet) return this.o.simulatedWallet(s);
    if (!operator.walletUrl) {
      return { delivered: false, statusCode: null, error: 'the operator has no wallet_url configured', responseExcerpt: null };
    }
    const url = new URL(settleUrl(operator.walletUrl));
    // Stored before the policy applied to wallet URLs, or changed behind the service's back.
    const refusal = refuseTarget(url, this.o.allowPrivateTargets);
    if (refusal) return { delivered: false, statusCode: null, error: refusal, responseExcerpt: null };
    const timestamp = String(this.o.clock.now());
    const signature = signRequest(operator.secrets[0]!, 'POST', url.pathname + url.search, timestamp, s.body);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'x-operator-key': operator.apiKey,
      'x-timestamp': timestamp,
      'x-signature': signature,
      'idempotency-key': s.idempotencyKey,
    };
    const res = await traced('wallet settle', url, headers, () =>
      postWithLimits(url, {
        headers,
        body: s.body,
        dispatcher: this.dispatcher,
        timeoutMs: this.o.timeoutMs,
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
  const notDelivered = (statusCode: number | null, text: string) =>
    ({ delivered: false, statusCode, error: text.slice(0, EXCERPT_CHARS), responseExcerpt: null });
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
