/**
 * What the metrics cost a place-bet, measured where they run, without HTTP load:
 * 1. the store half of a place-bet (IdempotencyService + placeCrashBet on a fresh SQLite file, in
 *    group-commit sized batches) on the bare store and on the instrumented one (per-transaction
 *    executor, after-commit hook, counter), alternating runs so machine noise hits both alike;
 * 2. the per-request HTTP work: one histogram observation with method/route/status labels.
 * Prints event-loop CPU per bet for each store variant and the HTTP cost per request; compare the
 * sum of the differences with the server CPU per place-bet in docs/benchmarks.md.
 *
 *   npx tsx bench/metrics-cost.ts [--batch 40] [--batches 1500] [--rounds 4]
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { placeCrashBet } from '../src/games/crash/crash-bets';
import { systemClock } from '../src/clock/clock';
import { ComplianceService } from '../src/compliance/compliance-service';
import { OperatorModes } from '../src/operators/operator-mode';
import { IdempotencyService } from '../src/idempotency/idempotency';
import { InstrumentedDatabase } from '../src/observability/instrumented-db';
import { ServiceMetrics } from '../src/observability/metrics';
import { settlementBacklog } from '../src/wallet/settlement-repository';
import { deliveryBacklog } from '../src/webhooks/delivery-repository';
import { OperatorService } from '../src/operators/operators';
import { SecretBox } from '../src/operators/secret-box';
import { roundRepository } from '../src/games/engine/round-repository';
import type { Database } from '../src/store/database';
import { openDatabase } from '../src/store/open';

const { values: flags } = parseArgs({
  options: {
    batch: { type: 'string', default: '40' },
    batches: { type: 'string', default: '1500' },
    rounds: { type: 'string', default: '4' },
  },
});
const batch = Number(flags.batch);
const batches = Number(flags.batches);
const rounds = Number(flags.rounds);

/** User + system CPU of this process's main thread, in microseconds (Linux). */
function mainThreadCpuUs(): number {
  const fields = readFileSync(`/proc/${process.pid}/task/${process.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

const dataDir = mkdtempSync(join(tmpdir(), 'rbs-metrics-cost-'));
const store = await openDatabase({ databaseUrl: null, dataDir });
try {
  const metrics = new ServiceMetrics({
    outboxBacklog: (queue) => (queue === 'webhooks' ? deliveryBacklog(store) : settlementBacklog(store)),
    now: () => Date.now(),
    leaders: () => [],
  });
  const instrumented = new InstrumentedDatabase(store, metrics, null);
  const operators = new OperatorService(store, new SecretBox(randomBytes(32)), systemClock, 0);
  const created = await operators.create({ name: 'metrics-cost' });
  const operator = (await operators.byApiKey(created.apiKey))!;
  const now = Date.now();
  await store.transaction((tx) =>
    roundRepository.insert(tx, {
      game: 'crash',
      seedHash: 'h',
      seed: 's',
      chainId: 'bench',
      chainIdx: 0,
      openedAt: now,
      bettingClosesAt: now + 86_400_000,
      settings: {},
    }),
  );
  const modes = new OperatorModes();
  const writes = { compliance: new ComplianceService({ modes }), modes };

  const run = async (db: Database, count: number): Promise<number> => {
    const idempotency = new IdempotencyService(db, () => Date.now());
    const placeBatch = (): Promise<unknown> =>
      Promise.all(
        Array.from({ length: batch }, () => {
          const body = {
            external_user_id: `p${String(Math.floor(Math.random() * 10_000)).padStart(5, '0')}`,
            amount: 100,
          };
          return idempotency.execute(
            { operatorId: operator.id, key: randomUUID(), route: 'POST /api/public/v1/place-bet', body },
            () => ({ statusCode: 409, body: {} }),
            async (tx) => {
              const bet = await placeCrashBet(
                tx,
                writes,
                operator,
                { externalUserId: body.external_user_id, amount: body.amount, autoCashout: null },
                Date.now(),
              );
              return { statusCode: 200, body: { bet_id: bet.id } };
            },
          );
        }),
      );
    const before = mainThreadCpuUs();
    for (let i = 0; i < count; i++) await placeBatch();
    return (mainThreadCpuUs() - before) / (count * batch);
  };

  await run(store, 300);
  await run(instrumented, 300);
  const bare: number[] = [];
  const counted: number[] = [];
  // The file grows as bets are written, and later runs cost a little more: alternate which goes first.
  for (let r = 0; r < rounds; r++) {
    if (r % 2 === 0) {
      bare.push(await run(store, batches));
      counted.push(await run(instrumented, batches));
    } else {
      counted.push(await run(instrumented, batches));
      bare.push(await run(store, batches));
    }
  }
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const placed = (await metrics.registry.getSingleMetric('rbs_bets_placed_total')!.get()).values[0]?.value ?? 0;
  console.log(
    `store path, ${batches * batch} bets per run, ${rounds} runs each (medians): ` +
      `bare ${median(bare).toFixed(1)} µs/bet, ` +
      `instrumented ${median(counted).toFixed(1)} µs/bet (bets counted: ${placed})`,
  );
  console.log(
    `  runs bare: ${bare.map((x) => x.toFixed(1)).join(' ')}; ` +
      `instrumented: ${counted.map((x) => x.toFixed(1)).join(' ')}`,
  );

  const n = 1_000_000;
  const started = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    metrics.httpDuration.observe('POST', '/api/public/v1/place-bet', 200, 0.002 + (i % 7) / 1000);
  }
  console.log(
    `HTTP histogram observation: ${(Number(process.hrtime.bigint() - started) / n / 1000).toFixed(2)} µs/request`,
  );
} finally {
  await store.close();
  rmSync(dataDir, { recursive: true, force: true });
}
