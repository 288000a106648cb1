/**
 * What every load scenario shares: how it is asked to run (store, size), what it hands back (report
 * lines and correctness checks), and how it runs alone from the command line:
 *
 *   npx tsx bench/scenarios/<name>.ts [--quick] [--store both|sqlite|postgresql]
 */
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { LoadSpec } from '../load';
import { DEFAULT_PG_URL } from '../processes';
import type { BenchService } from '../service';

export interface ScenarioOptions {
  /** null: SQLite; otherwise the PostgreSQL server a database is created on for the run. */
  pgUrl: string | null;
  /** The small size the test suite runs as a correctness check. */
  quick: boolean;
  log: (line: string) => void;
}

/** Nothing lost, nothing twice, money exact: a scenario's figures count only when all of these hold. */
export interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

export interface ScenarioReport {
  lines: string[];
  checks: Check[];
}

export type Scenario = (o: ScenarioOptions) => Promise<ScenarioReport>;

export const storeLabel = (pgUrl: string | null): string => (pgUrl ? 'postgresql' : 'sqlite');

export function check(name: string, ok: boolean, detail: string): Check {
  return { name, ok, detail };
}

export function reportLines(title: string, report: ScenarioReport): string[] {
  return [
    title,
    ...report.lines.map((l) => `  ${l}`),
    ...report.checks.map((c) => `  check ${c.ok ? 'OK      ' : 'MISMATCH'} ${c.name}: ${c.detail}`),
  ];
}

/** A percentile (0..100) of the values, nearest rank. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** Runs the scenario on the chosen stores when its file is the entry point; exits 1 on a failed check. */
export function runWhenMain(moduleUrl: string, name: string, scenario: Scenario): void {
  if (!process.argv[1] || moduleUrl !== pathToFileURL(process.argv[1]).href) return;
  const { values } = parseArgs({
    options: { quick: { type: 'boolean', default: false }, store: { type: 'string', default: 'both' } },
  });
  const pg = process.env.BENCH_DATABASE_URL ?? DEFAULT_PG_URL;
  const stores = values.store === 'sqlite' ? [null] : values.store === 'postgresql' ? [pg] : [null, pg];
  const log = (line: string): void => void process.stderr.write(`${line}\n`);
  (async () => {
    let failed = false;
    for (const pgUrl of stores) {
      const report = await scenario({ pgUrl, quick: values.quick!, log });
      process.stdout.write(`${reportLines(`${name} (${storeLabel(pgUrl)})`, report).join('\n')}\n`);
      failed ||= report.checks.some((c) => !c.ok);
    }
    process.exit(failed ? 1 : 0);
  })().catch((error) => {
    process.stderr.write(`${name} failed: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  });
}

const SURFACES = {
  A: { headers: { key: 'x-api-key', signature: 'x-signature', timestamp: 'x-timestamp' }, idempotencyHeader: true },
  B: {
    headers: { key: 'X-Operator-Key', signature: 'X-Signature', timestamp: 'X-Timestamp' },
    idempotencyHeader: false,
  },
};

/**
 * A fixed number of signed requests to the service (not a timed run), over `connections`, as one
 * operator's integration sends them; on PostgreSQL the database backends' CPU is counted too.
 */
export function burstAt(
  service: BenchService,
  surface: 'A' | 'B',
  spec: Pick<LoadSpec, 'name' | 'path' | 'body' | 'connections' | 'amount' | 'overallRate' | 'onResponse'>,
): LoadSpec {
  return {
    ...spec,
    baseUrl: service.child.baseUrl,
    identity: { apiKey: service.operator.apiKey, apiSecret: service.operator.apiSecret, ...SURFACES[surface] },
    durationS: 0,
    serverPid: service.child.proc.pid,
    serverEnded: service.child.ended,
    ...(service.store.databaseUrl ? { databaseUrl: service.store.databaseUrl } : {}),
  };
}

/** A duration in ms from the environment (a scenario's betting window), or the scenario's own default. */
export function envMs(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1_000) throw new Error(`${name} must be an integer of ms >= 1000, got ${raw}`);
  return n;
}
