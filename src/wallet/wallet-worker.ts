import type { Logger } from 'pino';
import { request, type Dispatcher } from 'undici';
import type { Clock, TimerHandle } from '../clock/clock';
import type { OperatorCredentials } from '../operators/operator';
import { traced } from '../observability/outbound';
import { signRequest } from '../signing/request-signature';
import type { Database } from '../store/database';
import { settlementRepository, type AttemptResult, type Settlement } from './settlements';

export interface WalletWorkerOptions {
  db: Database;
  clock: Clock;
  logger: Logger;
  credentialsOf: (operatorId: string) => Promise<OperatorCredentials>;
  retryScheduleMs: readonly number[];
  timeoutMs: number;
  pollIntervalMs: number;
  /** Deliveries in flight at once (each waits on an operator's wallet, not on this process). */
  concurrency?: number;
  dispatcher?: Dispatcher;
}

export const SETTLE_PATH = '/v1/bets/settle';
const EXCERPT_CHARS = 500;

/** The URL a settlement goes to: the operator's wallet base URL (which may carry a path) + /v1/bets/settle. */
export const settleUrl = (walletUrl: string): string => `${walletUrl.replace(/\/+$/, '')}${SETTLE_PATH}`;

/**
 * Delivers the wallet settlement outbox: claims due rows, POSTs each signed with the Surface B
 * scheme and the operator's current secret, and records every attempt. A 2xx is the only proof of
 * delivery; anything else (timeout, network error, 5xx, 4xx) leaves the settlement pending for the
 * next attempt with the same idempotency_key.
 */
export class WalletSettlementWorker {
  private timer: TimerHandle | null = null;
  private running: Promise<void> | null = null;
  private stopped = true;
  private readonly concurrency: number;
  private readonly leaseMs: number;

  constructor(private readonly o: WalletWorkerOptions) {
    this.concurrency = o.concurrency ?? 16;
    // Long enough to cover a whole attempt (the request times out first) plus recording it.
    this.leaseMs = o.timeoutMs + 1_000;
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
      result = { delivered: false, statusCode: null, error: describeError(error, this.o.timeoutMs), responseExcerpt: null };
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
    if (!operator.walletUrl) {
      return { delivered: false, statusCode: null, error: 'the operator has no wallet_url configured', responseExcerpt: null };
    }
    const url = new URL(settleUrl(operator.walletUrl));
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
      request(url, {
        method: 'POST',
        headers,
        body: s.body,
        signal: AbortSignal.timeout(this.o.timeoutMs),
        ...(this.o.dispatcher ? { dispatcher: this.o.dispatcher } : {}),
      }),
    );
    const text = await res.body.text();
    const delivered = res.statusCode >= 200 && res.statusCode < 300;
    return {
      delivered,
      statusCode: res.statusCode,
      error: delivered ? null : `wallet answered ${res.statusCode}`,
      responseExcerpt: text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS)}…` : text,
    };
  }
}

function describeError(error: unknown, timeoutMs: number): string {
  const e = error as { name?: string; code?: string; message?: string };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return `no answer within ${timeoutMs} ms (outcome unknown)`;
  const text = `${e?.code ? `${e.code}: ` : ''}${e?.message ?? String(error)}`;
  return text.slice(0, EXCERPT_CHARS);
}
