import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { betSettledEvent } from '../../src/bets/bet-events';
import type { ActiveCrashBet } from '../../src/bets/bet';
import { systemClock } from '../../src/clock/clock';
import { OperatorModes } from '../../src/operators/operator-mode';
import { OperatorService } from '../../src/operators/operators';
import { SecretBox } from '../../src/operators/secret-box';
import type { Database } from '../../src/store/database';
import { configureEventCheck, eventProblems, InvalidEventError } from '../../src/webhooks/event-check';
import type { DomainEvent } from '../../src/webhooks/domain-event';
import { recordEvents } from '../../src/webhooks/events';
import { freshDatabase } from '../support/harness';
import { betSettled, settledCrashBet } from '../support/webhook-events';

/**
 * Every event is checked against its published schema before it is written to the outbox. The
 * types stop a builder that misses or misspells a field at compile time (the @ts-expect-error lines
 * below fail `tsc` if they ever compile); these tests cover what reaches recordEvents past the types.
 */
describe('webhook events are checked against their schemas before they enter the outbox', () => {
  const modes = new OperatorModes();
  let db: Database;
  let dispose: () => Promise<void>;
  let operatorId: string;

  beforeAll(async () => {
    ({ db, dispose } = await freshDatabase('sqlite'));
    operatorId = (
      await new OperatorService(db, new SecretBox(randomBytes(32)), systemClock, 0).create({ name: 'Schemas' })
    ).id;
  });
  afterAll(async () => dispose());
  afterEach(() => configureEventCheck({ mode: 'throw', logger: { error: () => undefined } }));

  const eventCount = async (): Promise<number> =>
    Number((await db.get<{ n: number }>('SELECT COUNT(*) AS n FROM events'))?.n);

  it('writes an event its builder made', async () => {
    const before = await eventCount();
    const [envelope] = await db.transaction((tx) => recordEvents(tx, modes, [betSettled(operatorId)], Date.now()));
    expect(eventProblems(envelope!)).toEqual([]);
    expect(await eventCount()).toBe(before + 1);
  });

  it('does not compile an event with a missing, misspelt or mistyped field', () => {
    const { data } = betSettled(operatorId) as Extract<DomainEvent, { type: 'bet.settled' }>;
    const { settled_at: _dropped, ...withoutSettledAt } = data;
    const wrong: DomainEvent[] = [
      // @ts-expect-error settled_at is required
      { operatorId, type: 'bet.settled', data: withoutSettledAt },
      // @ts-expect-error cashout_kind is misspelt
      { operatorId, type: 'bet.settled', data: { ...data, cashoutKind: 'manual' } },
      // @ts-expect-error a bet.settled status is a final one
      { operatorId, type: 'bet.settled', data: { ...data, status: 'active' } },
      // @ts-expect-error a round event's data is a round, not a bet
      { operatorId: null, type: 'round.closed', data },
    ];
    expect(wrong).toHaveLength(4);
  });

  it.each([
    [
      'a missing field',
      (d: Record<string, unknown>) => ({ ...d, settled_at: undefined }),
      '/data must have required properties settled_at',
    ],
    [
      'a misspelt field',
      (d: Record<string, unknown>) => ({ ...d, setled_at: 1 }),
      '/data must not have additional properties',
    ],
    [
      'a float where an integer is promised',
      (d: Record<string, unknown>) => ({ ...d, round_number: 7.5 }),
      '/data/round_number must be integer',
    ],
    [
      'a value outside the enumeration',
      (d: Record<string, unknown>) => ({ ...d, cashout_kind: 'panic' }),
      '/data/cashout_kind',
    ],
  ])('refuses %s: the change rolls back with it and nothing is queued', async (_name, spoil, problem) => {
    const good = betSettled(operatorId);
    // What a cast or a spread of untyped data could hand over past the types.
    const spoilt = { ...good, data: JSON.parse(JSON.stringify(spoil(good.data))) } as DomainEvent;
    const before = await eventCount();
    const write = db.transaction(async (tx) => {
      await tx.run("UPDATE operators SET name = 'changed' WHERE id = ?", [operatorId]);
      return recordEvents(tx, modes, [betSettled(operatorId), spoilt], Date.now());
    });
    const error = await write.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidEventError);
    expect((error as InvalidEventError).problems.join('\n')).toContain(problem);
    expect(await eventCount()).toBe(before);
    const row = await db.get<{ name: string }>('SELECT name FROM operators WHERE id = ?', [operatorId]);
    expect(row?.name).toBe('Schemas');
  });

  it('refuses an event of a type no schema describes', async () => {
    const unknown = { operatorId, type: 'bet.placed', data: {} } as unknown as DomainEvent;
    await expect(db.transaction((tx) => recordEvents(tx, modes, [unknown], Date.now()))).rejects.toThrow(
      'unknown event type "bet.placed"',
    );
  });

  it('in production logs a payload that misses its schema and writes it: the change it reports was made', async () => {
    const logged: unknown[] = [];
    configureEventCheck({ mode: 'log', logger: { error: (...args: unknown[]) => void logged.push(args) } });
    const spoilt = { ...betSettled(operatorId), data: { bet_id: 'b' } } as DomainEvent;
    const before = await eventCount();
    await db.transaction((tx) => recordEvents(tx, modes, [spoilt], Date.now()));
    expect(await eventCount()).toBe(before + 1);
    expect(logged).toHaveLength(1);
    expect(JSON.stringify(logged[0])).toContain('does not match its schema');
  });

  it('refuses to build bet.settled for a bet that is not settled', () => {
    const { payout, cashoutMultiplier, cashoutKind, settledAt, ...placed } = settledCrashBet();
    const active: ActiveCrashBet = { ...placed, status: 'active' };
    // @ts-expect-error the type already refuses an active bet; the builder still checks untyped callers
    expect(() => betSettledEvent(active)).toThrow('needs a settled bet');
  });
});
