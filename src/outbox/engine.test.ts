import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/clock';
import { retryDelayMs, scheduleBackoff } from './backoff';
import {
  OutboxEngine,
  TargetBudget,
  type AttemptResult,
  type ClaimQuery,
  type Outcome,
  type OutboxClaim,
  type OutboxRepository,
  type OutboxSender,
} from './engine';

interface Row {
  id: string;
  target: string;
  status: 'pending' | 'delivered' | 'dead' | 'cancelled';
  attempts: number;
  nextAttemptAt: number;
  claimedUntil: number | null;
}

/** The contract an outbox repository keeps, in memory: what the engine may rely on. */
class MemoryOutbox implements OutboxRepository<OutboxClaim> {
  readonly rows = new Map<string, Row>();
  readonly log: { id: string; attempt: number; error: string | null }[] = [];
  recordCalls = 0;

  add(id: string, at = 0, target = 'only'): void {
    this.rows.set(id, { id, target, status: 'pending', attempts: 0, nextAttemptAt: at, claimedUntil: null });
  }

  async claim(q: ClaimQuery): Promise<OutboxClaim[]> {
    const budget = new TargetBudget(q);
    const due = [...this.rows.values()]
      .filter(
        (r) =>
          r.status === 'pending' &&
          r.nextAttemptAt <= q.now &&
          (r.claimedUntil === null || r.claimedUntil <= q.now) &&
          !budget.full.includes(r.target),
      )
      .slice(0, q.limit);
    const claims: OutboxClaim[] = [];
    for (const r of due) {
      if (r.attempts < q.maxAttempts && !budget.take(r.target)) continue;
      if (r.claimedUntil !== null && r.attempts > 0) this.log.push({ id: r.id, attempt: r.attempts, error: 'lost' });
      if (r.attempts >= q.maxAttempts) {
        Object.assign(r, { status: 'dead', claimedUntil: null });
        continue;
      }
      r.attempts++;
      r.claimedUntil = q.leaseUntil;
      claims.push({ id: r.id, target: r.target, attempt: r.attempts, leaseUntil: q.leaseUntil });
    }
    return claims;
  }

  async record(outcomes: readonly Outcome<OutboxClaim>[]): Promise<void> {
    this.recordCalls++;
    for (const o of outcomes) {
      const r = this.rows.get(o.claim.id)!;
      if (r.claimedUntil !== o.claim.leaseUntil) continue;
      if (o.kind !== 'cancelled') this.log.push({ id: r.id, attempt: o.claim.attempt, error: o.result.error });
      r.claimedUntil = null;
      if (o.kind === 'retry') r.nextAttemptAt = o.at;
      else r.status = o.kind;
    }
  }

  async releaseLeases(now: number): Promise<void> {
    for (const r of this.rows.values()) if (r.claimedUntil !== null && r.claimedUntil > now) r.claimedUntil = now;
  }
}

/**
 * A store whose claim reads its snapshot before an answer being written lands, and returns only
 * after it did (two PostgreSQL transactions interleaving): the claim finds nothing due, although the
 * answer made its row due again.
 */
class InterleavingOutbox extends MemoryOutbox {
  private written: (() => void)[] = [];
  private interleaved = false;

  override async claim(q: ClaimQuery): Promise<OutboxClaim[]> {
    const claims = await super.claim(q);
    if (claims.length === 0 && !this.interleaved) {
      this.interleaved = true;
      await new Promise<void>((r) => this.written.push(r));
      await new Promise((r) => setImmediate(r));
    }
    return claims;
  }

  override async record(outcomes: readonly Outcome<OutboxClaim>[]): Promise<void> {
    await new Promise((r) => setImmediate(r));
    await super.record(outcomes);
    for (const r of this.written.splice(0)) r();
  }
}

/** Holds every claim from the `gateFrom`-th on until `open` (a claim that runs while attempts end). */
class GatedClaims extends MemoryOutbox {
  claims = 0;
  gateFrom = Number.POSITIVE_INFINITY;
  private gate: Promise<void> | null = null;
  private opened: (() => void) | null = null;

  override async claim(q: ClaimQuery): Promise<OutboxClaim[]> {
    const claims = await super.claim(q);
    if (++this.claims >= this.gateFrom) {
      this.gate ??= new Promise<void>((r) => (this.opened = r));
      await this.gate;
    }
    return claims;
  }

  open(): void {
    this.gateFrom = Number.POSITIVE_INFINITY;
    this.opened?.();
  }
}

/** Answers each attempt as told, or holds it until released (to see what is in flight). */
class ScriptedSender implements OutboxSender<OutboxClaim> {
  answer: (c: OutboxClaim) => boolean | null = () => true;
  /** The error text of a failed attempt, as the far end's answer would give it. */
  failure = 'HTTP 500';
  hold = false;
  /** A target whose attempts never end until released (a receiver that hangs). */
  stalled: string | null = null;
  inFlight = 0;
  maxSeen = 0;
  closed = 0;
  private held: (() => void)[] = [];

  async send(c: OutboxClaim): Promise<Omit<AttemptResult, 'startedAt'> | null> {
    this.inFlight++;
    this.maxSeen = Math.max(this.maxSeen, this.inFlight);
    if (this.hold || c.target === this.stalled) await new Promise<void>((r) => this.held.push(r));
    this.inFlight--;
    const ok = this.answer(c);
    if (ok === null) return null;
    return {
      ok,
      statusCode: ok ? 200 : 500,
      latencyMs: 1,
      error: ok ? null : this.failure,
      responseExcerpt: null,
      retryAfterMs: null,
    };
  }

  release(): void {
    this.hold = false;
    this.stalled = null;
    for (const r of this.held.splice(0)) r();
  }

  async close(): Promise<void> {
    this.closed++;
  }
}

const flush = () => new Promise((r) => setImmediate(r));

/** No attempt in flight, and room for every row: a claim made outside the engine. */
const NO_LIMIT = { inFlightByTarget: new Map<string, number>(), perTargetLimit: 1_000 };

function setup(
  o: {
    schedule?: number[];
    attempts?: 'schedule' | 'unbounded';
    maxInFlight?: number;
    maxInFlightPerTarget?: number;
    batchSize?: number;
    repository?: MemoryOutbox;
  } = {},
) {
  const clock = new FakeClock(1_000_000);
  const repository = o.repository ?? new MemoryOutbox();
  const sender = new ScriptedSender();
  const engine = new OutboxEngine({
    name: 'test',
    clock,
    logger: pino({ level: 'silent' }),
    repository,
    sender,
    backoff: scheduleBackoff(o.schedule ?? [0, 100, 1_000], { attempts: o.attempts ?? 'schedule' }),
    leaseMs: 5_000,
    pollIntervalMs: 50,
    batchSize: o.batchSize ?? 10,
    maxInFlight: o.maxInFlight ?? 10,
    maxInFlightPerTarget: o.maxInFlightPerTarget ?? o.maxInFlight ?? 10,
    releaseLeasesAtStart: true,
  });
  return { clock, repository, sender, engine };
}

describe('OutboxEngine', () => {
  it('retries at exact delays from the injected clock, then dead-letters after the last attempt', async () => {
    const { clock, repository, sender, engine } = setup();
    sender.answer = () => false;
    repository.add('a');
    expect(await engine.drain()).toBe(1);
    expect(repository.rows.get('a')).toMatchObject({
      status: 'pending',
      attempts: 1,
      nextAttemptAt: clock.now() + 100,
    });
    clock.advance(99);
    expect(await engine.drain()).toBe(0);
    clock.advance(1);
    expect(await engine.drain()).toBe(1);
    expect(repository.rows.get('a')).toMatchObject({ attempts: 2, nextAttemptAt: clock.now() + 1_000 });
    clock.advance(1_000);
    expect(await engine.drain()).toBe(1);
    expect(repository.rows.get('a')).toMatchObject({ status: 'dead', attempts: 3 });
    clock.advance(60_000);
    expect(await engine.drain()).toBe(0);
    expect(repository.log.map((l) => l.attempt)).toEqual([1, 2, 3]);
  });

  it('on an unbounded backoff keeps retrying at the last interval and never dead-letters', async () => {
    const { clock, repository, sender, engine } = setup({ schedule: [0, 100], attempts: 'unbounded' });
    sender.answer = () => false;
    repository.add('a');
    for (let i = 0; i < 6; i++) {
      await engine.drain();
      clock.advance(100);
    }
    expect(repository.rows.get('a')).toMatchObject({ status: 'pending', attempts: 6 });
    sender.answer = () => true;
    await engine.drain();
    expect(repository.rows.get('a')).toMatchObject({ status: 'delivered', attempts: 7 });
  });

  it('records the text of an answer with its NUL characters replaced, so every store can hold it', async () => {
    const { repository, sender, engine } = setup();
    sender.answer = () => false;
    sender.failure = 'HTTP 500: bad\u0000reply';
    repository.add('a');
    await engine.drain();
    // PostgreSQL text cannot hold a NUL: one such answer would fail the batch's whole record transaction.
    expect(repository.log).toEqual([{ id: 'a', attempt: 1, error: 'HTTP 500: bad\uFFFDreply' }]);
  });

  it('records a sender that had nothing to send as cancelled, without an attempt log entry', async () => {
    const { repository, sender, engine } = setup();
    sender.answer = () => null;
    repository.add('gone');
    await engine.drain();
    expect(repository.rows.get('gone')!.status).toBe('cancelled');
    expect(repository.log).toEqual([]);
  });

  it('never has more than maxInFlight attempts in flight, across claims', async () => {
    const { repository, sender, engine } = setup({ maxInFlight: 3, batchSize: 2 });
    for (let i = 0; i < 10; i++) repository.add(`r${i}`);
    sender.hold = true;
    const draining = engine.drain();
    await flush();
    expect(sender.inFlight).toBe(3);
    sender.release();
    expect(await draining).toBe(10);
    expect(sender.maxSeen).toBeLessThanOrEqual(3);
    expect([...repository.rows.values()].every((r) => r.status === 'delivered')).toBe(true);
  });

  it("keeps a target that hangs within its share of the attempts, so other targets' rows go out", async () => {
    const { repository, sender, engine } = setup({ maxInFlight: 4, maxInFlightPerTarget: 2, batchSize: 1 });
    for (let i = 0; i < 6; i++) repository.add(`hangs${i}`, 0, 'hangs');
    repository.add('fine', 0, 'fine');
    sender.stalled = 'hangs';
    const draining = engine.drain();
    for (let i = 0; i < 10; i++) await flush();
    // Two of the hanging target's attempts are in flight, no more; the other target's row was delivered.
    expect(sender.inFlight).toBe(2);
    expect(repository.rows.get('fine')!.status).toBe('delivered');
    expect([...repository.rows.values()].filter((r) => r.claimedUntil !== null).map((r) => r.id)).toEqual([
      'hangs0',
      'hangs1',
    ]);
    sender.release();
    expect(await draining).toBe(7);
    // The two stalled attempts and the other target's one: the hanging target never had a third.
    expect(sender.maxSeen).toBe(3);
    expect([...repository.rows.values()].every((r) => r.status === 'delivered')).toBe(true);
  });

  it("claims a busy target's next rows as soon as its attempts end, not a poll interval later", async () => {
    const { clock, repository, sender, engine } = setup({ maxInFlight: 10, maxInFlightPerTarget: 2, batchSize: 2 });
    for (let i = 0; i < 6; i++) repository.add(`r${i}`);
    sender.hold = true;
    await engine.start();
    for (let i = 0; i < 5; i++) await flush();
    expect(sender.inFlight).toBe(2);
    const timeBefore = clock.now();
    sender.release();
    const delivered = () => [...repository.rows.values()].filter((r) => r.status === 'delivered').length;
    for (let i = 0; i < 200 && delivered() < 6; i++) await flush();
    // The clock never moved: no poll interval passed between the claims.
    expect(clock.now()).toBe(timeBefore);
    expect(delivered()).toBe(6);
    expect(sender.maxSeen).toBe(2);
    await engine.stop();
  });

  it('looks again at once for a target at its limit when a claim began, its attempts ended meanwhile', async () => {
    const repository = new GatedClaims();
    const { clock, sender, engine } = setup({ maxInFlight: 10, maxInFlightPerTarget: 2, batchSize: 2, repository });
    for (let i = 0; i < 4; i++) repository.add(`r${i}`);
    sender.hold = true;
    repository.gateFrom = 2;
    await engine.start();
    for (let i = 0; i < 5; i++) await flush();
    // The second claim saw the target full and is still running when both attempts end.
    expect(repository.claims).toBe(2);
    sender.release();
    for (let i = 0; i < 5; i++) await flush();
    repository.open();
    const delivered = () => [...repository.rows.values()].filter((r) => r.status === 'delivered').length;
    for (let i = 0; i < 200 && delivered() < 4; i++) await flush();
    expect(delivered()).toBe(4);
    expect(clock.now()).toBe(1_000_000);
    await engine.stop();
  });

  it('does not end a drain on an empty claim that ran while an answer made its row due again', async () => {
    const repository = new InterleavingOutbox();
    const { sender, engine } = setup({ schedule: [0, 0], attempts: 'unbounded', repository });
    let calls = 0;
    sender.answer = () => ++calls > 1;
    repository.add('a');
    sender.hold = true;
    const draining = engine.drain();
    await flush();
    sender.release();
    // The first answer (a failure, due again at once) lands while the next claim holds its snapshot.
    expect(await draining).toBe(2);
    expect(repository.rows.get('a')).toMatchObject({ status: 'delivered', attempts: 2 });
  });

  it('bounds a drain by its number of claims, so zero delays cannot spin', async () => {
    const { repository, sender, engine } = setup({ schedule: [0, 0], attempts: 'unbounded' });
    sender.answer = () => false;
    repository.add('a');
    expect(await engine.drain(5)).toBe(5);
    expect(repository.rows.get('a')).toMatchObject({ status: 'pending', attempts: 5, claimedUntil: null });
  });

  it('retakes the claims of a worker that died once their lease runs out, logging the lost attempt', async () => {
    const { clock, repository, sender, engine } = setup({ attempts: 'unbounded' });
    repository.add('a');
    // A worker that claimed and died: the row is leased, its attempt number spent, nothing recorded.
    await repository.claim({
      now: clock.now(),
      leaseUntil: clock.now() + 5_000,
      leaseMs: 5_000,
      limit: 10,
      maxAttempts: Number.POSITIVE_INFINITY,
      ...NO_LIMIT,
    });
    expect(await engine.drain()).toBe(0);
    clock.advance(5_000);
    expect(await engine.drain()).toBe(1);
    expect(repository.rows.get('a')).toMatchObject({ status: 'delivered', attempts: 2 });
    expect(repository.log).toEqual([
      { id: 'a', attempt: 1, error: 'lost' },
      { id: 'a', attempt: 2, error: null },
    ]);
    expect(sender.maxSeen).toBe(1);
  });

  it('releases open leases at start, and stops gracefully: claims end, sends in flight are recorded', async () => {
    const { clock, repository, sender, engine } = setup();
    repository.add('stale');
    const lease = { leaseUntil: clock.now() + 5_000, leaseMs: 5_000 };
    await repository.claim({ now: clock.now(), ...lease, limit: 1, maxAttempts: 3, ...NO_LIMIT });
    repository.add('b');
    sender.hold = true;
    await engine.start();
    await flush();
    await flush();
    // Both claimed at once: the stale lease did not have to run out.
    expect(sender.inFlight).toBe(2);
    const stopping = engine.stop();
    repository.add('after-stop');
    sender.release();
    await stopping;
    expect(repository.rows.get('stale')).toMatchObject({ status: 'delivered', attempts: 2 });
    expect(repository.rows.get('b')!.status).toBe('delivered');
    expect(repository.rows.get('after-stop')!.status).toBe('pending');
    expect(sender.closed).toBe(1);
  });

  it('writes the answers that arrive together in one repository call', async () => {
    const { repository, engine } = setup({ batchSize: 50, maxInFlight: 50 });
    for (let i = 0; i < 40; i++) repository.add(`r${i}`);
    await engine.drain();
    expect(repository.recordCalls).toBeLessThan(40);
  });
});

describe('scheduleBackoff', () => {
  it('spreads webhook delays by ±10 % from an injected source and honours Retry-After as a minimum', () => {
    const low = scheduleBackoff([0, 10_000, 60_000], {
      attempts: 'schedule',
      jitter: 0.1,
      random: () => 0,
      honourRetryAfter: true,
    });
    const high = scheduleBackoff([0, 10_000, 60_000], {
      attempts: 'schedule',
      jitter: 0.1,
      random: () => 1,
      honourRetryAfter: true,
    });
    expect([low.delayAfter(1, null), high.delayAfter(1, null)]).toEqual([9_000, 11_000]);
    expect(low.delayAfter(2, 120_000)).toBe(120_000);
    expect(low.maxAttempts).toBe(3);
  });

  it('is exact without jitter, ignores Retry-After unless asked, and repeats the last interval', () => {
    const b = scheduleBackoff([0, 1_000, 5_000], { attempts: 'unbounded' });
    expect([1, 2, 3, 50].map((a) => b.delayAfter(a, 60_000))).toEqual([1_000, 5_000, 5_000, 5_000]);
    expect(b.maxAttempts).toBe(Number.POSITIVE_INFINITY);
    expect(retryDelayMs([], 3)).toBe(0);
    expect(() => scheduleBackoff([], { attempts: 'schedule' })).toThrow(/at least one entry/);
  });
});
