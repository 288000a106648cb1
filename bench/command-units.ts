/**
 * The store half of a place-bet without HTTP, as a command unit (`BetCommands.place`: a synchronous
 * SQLite unit, or rbs_place_bet(s) on PostgreSQL) against the interactive path it replaces
 * (`IdempotencyService.execute` + `placeCrashBet`), `--concurrency` bets in flight like the bench's
 * connections. Prints bets/s, the service process's CPU per bet and, on PostgreSQL, the CPU per bet
 * of the pool's own backends (read from /proc: PostgreSQL must run on this machine).
 *
 *   npx tsx bench/command-units.ts [--bets 10000] [--concurrency 50] [--path unit|interactive]
 *                                  [--pg postgres://…] [--pool 10]
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { BetCommands } from '../src/bets/bet-commands';
import { timeOrderedId } from '../src/ids/time-ordered-id';
import { ComplianceService } from '../src/compliance/compliance-service';
import { OperatorModes } from '../src/operators/operator-mode';
import { placeCrashBet } from '../src/games/crash/crash-bets';
import { roundRepository } from '../src/games/engine/round-repository';
import { IdempotencyService } from '../src/idempotency/idempotency';
import { DEFAULT_OPERATOR_SETTINGS, type Operator } from '../src/operators/operator';
import type { Database } from '../src/store/database';
import { migrate } from '../src/store/migrate';
import { PostgresDatabase } from '../src/store/postgres';
import { SqliteDatabase } from '../src/store/sqlite';

const { values: flags } = parseArgs({
  options: {
    bets: { type: 'string', default: '10000' },
    concurrency: { type: 'string', default: '50' },
    path: { type: 'string', default: 'unit' },
    pg: { type: 'string' },
    pool: { type: 'string', default: '10' },
  },
});
const bets = Number(flags.bets);
const concurrency = Number(flags.concurrency);
const app = `rbs_units_${randomBytes(4).toString('hex')}`;

async function open(): Promise<{ db: Database; backends: () => Promise<number[]>; dispose: () => Promise<void> }> {
  if (!flags.pg) {
    const dir = mkdtempSync(join(tmpdir(), 'rbs-units-'));
    const db = new SqliteDatabase({ filename: join(dir, 'service.db') });
    await migrate(db);
    return {
      db,
      backends: async () => [],
      dispose: async () => (await db.close(), rmSync(dir, { recursive: true, force: true })),
    };
  }
  const admin = new pg.Client({ connectionString: flags.pg });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${app}`);
  const url = `${flags.pg}${flags.pg.includes('?') ? '&' : '?'}application_name=${app}`;
  const db = new PostgresDatabase({ connectionString: url, schema: app, poolSize: Number(flags.pool) });
  await migrate(db);
  return {
    db,
    backends: async () =>
      (await admin.query('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [app])).rows.map((r) => r.pid),
    dispose: async () => {
      await db.close();
      await admin.query(`DROP SCHEMA ${app} CASCADE`);
      await admin.end();
    },
  };
}

/** CPU ticks (1/100 s) of these processes so far. */
const ticks = (pids: number[]): number =>
  pids.reduce((sum, pid) => {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      return sum + Number(fields[11]) + Number(fields[12]);
    } catch {
      return sum;
    }
  }, 0);

const { db, backends, dispose } = await open();
await db.transaction((tx) =>
  tx.run(
    `INSERT INTO operators (id, name, api_key, secret_enc, status, settings, created_at, updated_at)
     VALUES ('op', 'bench', 'k', 'x', 'active', '{}', 1, 1)`,
  ),
);
const start = Date.now();
await db.transaction((tx) =>
  roundRepository.insert(tx, {
    game: 'crash',
    seedHash: 'h',
    seed: 's',
    chainId: 'c',
    chainIdx: 1,
    openedAt: start,
    bettingClosesAt: start + 3_600_000,
    settings: {},
  }),
);
const idempotency = new IdempotencyService(db, () => Date.now());
const betCommands = new BetCommands(db);
const modes = new OperatorModes();
const writes = { compliance: new ComplianceService({ modes }), modes };
const operator = { id: 'op', mode: 'live', settings: DEFAULT_OPERATOR_SETTINGS } as Operator;
const player = (n: number): string => `p${String(n % 10_000).padStart(5, '0')}`;

async function placeOne(n: number): Promise<void> {
  const now = Date.now();
  const key = randomUUID();
  if (flags.path === 'interactive') {
    await idempotency.execute(
      { operatorId: 'op', key, route: 'POST /place-bet', body: { n }, signature: key },
      (e) => ({ statusCode: 409, body: { code: e.code } }),
      async (tx) => {
        const bet = await placeCrashBet(
          tx,
          writes,
          operator,
          { externalUserId: player(n), amount: 100, autoCashout: null },
          Date.now(),
        );
        return { statusCode: 200, body: { bet_id: bet.id, round_number: bet.roundNumber } };
      },
    );
    return;
  }
  const answer = await betCommands.place({
    claim: { operatorId: 'op', key, requestHash: randomUUID(), signature: key, now },
    refusal: null,
    game: 'crash',
    world: null,
    roundId: null,
    closed: { statusCode: 409, response: '{"error":"closed","code":"BETTING_CLOSED"}' },
    placed: { prefix: '{"bet_id":"b","round_number":', suffix: ',"amount":100}' },
    bet: {
      id: timeOrderedId(now),
      player: player(n),
      sessionId: null,
      currency: null,
      amount: 100,
      autoCashout: null,
      selections: null,
      status: 'active',
      potentialPayout: null,
    },
    velocity: { limit: 120, since: now - 60_000 },
  });
  if (!('outcome' in answer) || answer.outcome !== 'placed')
    throw new Error(`unexpected answer ${JSON.stringify(answer)}`);
}

let next = 0;
const worker = async (): Promise<void> => {
  while (next < bets) await placeOne(next++);
};
// Fill the pool before measuring, so every backend is counted.
await Promise.all(Array.from({ length: concurrency }, () => placeOne(next++)));
const pids = await backends();
const pg0 = ticks(pids);
const cpu0 = process.cpuUsage();
const t0 = performance.now();
next = 0;
await Promise.all(Array.from({ length: concurrency }, worker));
const seconds = (performance.now() - t0) / 1000;
const cpu = process.cpuUsage(cpu0);
const line = [
  `${flags.pg ? 'postgresql' : 'sqlite'} ${flags.path}: ${bets} bets, ${concurrency} in flight`,
  `${Math.round(bets / seconds)} bets/s`,
  `service CPU ${((cpu.user + cpu.system) / bets).toFixed(0)} µs/bet`,
  ...(flags.pg
    ? [`PostgreSQL CPU ${(((ticks(pids) - pg0) * 10_000) / bets).toFixed(0)} µs/bet (${pids.length} backends)`]
    : []),
];
console.log(line.join(', '));
await dispose();
