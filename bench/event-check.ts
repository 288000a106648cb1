/**
 * What the outbox's schema check (src/webhooks/event-check.ts) costs, beside what writing the event
 * costs anyway: the check of one envelope per event type, and recordEvents of one bet.settled (a
 * cash-out's event) and of 1 000 (a round that settles 1 000 bets) on a fresh SQLite file.
 *
 *   npx tsx bench/event-check.ts [--iterations 200000]
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { CashedOutCrashBet, SettledStockRaceBet } from '../src/bets/bet';
import { betSettledEvent } from '../src/bets/bet-events';
import { systemClock } from '../src/clock/clock';
import { OperatorModes } from '../src/operators/operator-mode';
import { OperatorService } from '../src/operators/operators';
import { SecretBox } from '../src/operators/secret-box';
import { migrate } from '../src/store/migrate';
import { SqliteDatabase } from '../src/store/sqlite';
import { eventProblems } from '../src/webhooks/event-check';
import type { DomainEvent, EventEnvelope } from '../src/webhooks/domain-event';
import { recordEvents } from '../src/webhooks/events';

const { values: flags } = parseArgs({ options: { iterations: { type: 'string', default: '200000' } } });
const iterations = Number(flags.iterations);

const bet = (operatorId: string, i: number): CashedOutCrashBet => ({
  id: `bet_${i}`,
  operatorId,
  game: 'crash',
  roundId: 'round_1',
  roundNumber: 7,
  player: `player-${i}`,
  sessionId: null,
  currency: null,
  amount: 100,
  autoCashout: null,
  selections: null,
  status: 'cashed_out',
  potentialPayout: null,
  payout: 237,
  cashoutMultiplier: 237,
  cashoutKind: 'manual',
  placedAt: 1_763_700_000_000,
  settledAt: 1_763_700_004_000,
});

const raceBet = (operatorId: string, i: number): SettledStockRaceBet => ({
  ...bet(operatorId, i),
  game: 'stock_race',
  sessionId: 'ses_1',
  currency: 'EUR',
  selections: ['NVDA', 'AAPL'],
  autoCashout: null,
  status: 'won',
  cashoutMultiplier: null,
  cashoutKind: null,
});

const envelope = (e: DomainEvent): EventEnvelope =>
  ({ id: 'evt_1', type: e.type, created_at: 1_763_700_004_000, livemode: true, data: e.data }) as EventEnvelope;

const samples: [string, EventEnvelope][] = [
  ['bet.settled (Crash)', envelope(betSettledEvent(bet('op_1', 1)))],
  ['bet.settled (Stock Race)', envelope(betSettledEvent(raceBet('op_1', 2), { winner: 'NVDA', pct: 8.85 }))],
];

function microsPerCall(fn: () => void, n: number): number {
  for (let i = 0; i < Math.min(n, 10_000); i++) fn();
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) fn();
  return Number(process.hrtime.bigint() - start) / 1000 / n;
}

for (const [name, e] of samples) {
  if (eventProblems(e).length > 0)
    throw new Error(`${name} sample does not match its schema: ${eventProblems(e).join('; ')}`);
  console.log(`check ${name}: ${microsPerCall(() => eventProblems(e), iterations).toFixed(3)} µs`);
}

const dir = mkdtempSync(join(tmpdir(), 'rbs-event-check-'));
try {
  const db = new SqliteDatabase({ filename: join(dir, 'service.db') });
  await migrate(db);
  const op = await new OperatorService(db, new SecretBox(randomBytes(32)), systemClock, 0).create({ name: 'bench' });
  let seq = 0;
  const modes = new OperatorModes();
  for (const size of [1, 1000]) {
    const rounds = size === 1 ? 2000 : 20;
    const write = async () => {
      const events = Array.from({ length: size }, () => betSettledEvent(bet(op.id, seq++)));
      await db.transaction((tx) => recordEvents(tx, modes, events, Date.now()));
    };
    for (let i = 0; i < 5; i++) await write();
    const cpu = process.cpuUsage();
    for (let i = 0; i < rounds; i++) await write();
    const used = process.cpuUsage(cpu);
    const perEvent = (used.user + used.system) / rounds / size;
    console.log(
      `recordEvents, ${size} bet.settled per transaction: ${perEvent.toFixed(1)} µs CPU per event (check included)`,
    );
  }
  await db.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
