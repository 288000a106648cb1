/**
 * A/B of two checkouts under the same conditions: the service of this checkout and of another one
 * (`--base DIR`, e.g. a `git worktree` of the commit to compare with) run side by side, with the
 * bare Fastify baseline, and the load moves between them in short slices, round-robin, so drift on
 * a shared machine (other work, the host) hits every target alike. Prints, per target and case,
 * req/s and server CPU µs/req over all slices, and each case's ratio to bare in the same slices.
 *
 *   npx tsx bench/ab.ts --base ../other-checkout [--cases signed,place] [--slices 10] [--slice-seconds 2]
 *                       [--connections 50]
 *
 * SQLite only. The place-bet rows are writes like the main bench's (fresh keys, every 200 durable).
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { runLoad, type CaseResult, type LoadSpec } from './load';
import { ROOT, startChild, type Child } from './processes';
import { startService, type BenchService } from './service';

const { values: flags } = parseArgs({
  options: {
    base: { type: 'string' },
    cases: { type: 'string', default: 'signed,place' },
    slices: { type: 'string', default: '10' },
    'slice-seconds': { type: 'string', default: '2' },
    connections: { type: 'string', default: '50' },
  },
});
if (!flags.base) throw new Error('--base DIR: the other checkout to compare with');
const trees = [
  { name: 'base', root: resolve(flags.base) },
  { name: 'this', root: ROOT },
];
const cases = flags.cases!.split(',').map((c) => c.trim());
const slices = Number(flags.slices);
const sliceS = Number(flags['slice-seconds']);
const connections = Number(flags.connections);

const SURFACE_A = { key: 'x-api-key', signature: 'x-signature', timestamp: 'x-timestamp' };
const betBody = (i: number): string => `{"external_user_id":"p${String(i % 10_000).padStart(5, '0')}","amount":100}`;
let verifyCounter = 0;
const verifyBody = (): string =>
  `{"endpoint_secret":"whsec_bench_${verifyCounter++}","body":"{}","signature":"t=1,v1=00"}`;

interface Target {
  label: string;
  spec: Omit<LoadSpec, 'name' | 'durationS'>;
  totals: { responses: number; seconds: number; cpuUs: number };
  /** Per slice: req/s. */
  rps: number[];
}

function serviceSpec(service: BenchService, path: string, body: (i: number) => string, idempotencyHeader: boolean) {
  const { apiKey, apiSecret } = service.operator;
  return {
    baseUrl: service.child.baseUrl,
    path,
    body,
    identity: { apiKey, apiSecret, headers: SURFACE_A, idempotencyHeader },
    connections,
    serverPid: service.child.proc.pid,
    serverEnded: service.child.ended,
  };
}

const log = (line: string): void => void process.stderr.write(`${line}\n`);
const services: BenchService[] = [];
let bare: Child | null = null;
try {
  bare = await startChild('bench/bare-fastify.ts', { ...process.env });
  const targets: Target[] = [];
  const add = (label: string, spec: Target['spec']): void =>
    void targets.push({ label, spec, totals: { responses: 0, seconds: 0, cpuUs: 0 }, rps: [] });
  add('bare', {
    baseUrl: bare.baseUrl,
    path: '/bare',
    body: betBody,
    mimicHeaders: true,
    connections,
    serverPid: bare.proc.pid,
  });
  for (const tree of trees) {
    log(`starting the service of ${tree.root}…`);
    const service = await startService({ pgUrl: null, env: { CRASH_BETTING_WINDOW_MS: '3600000' }, root: tree.root });
    services.push(service);
    if (cases.includes('signed'))
      add(`signed ${tree.name}`, serviceSpec(service, '/api/public/v1/webhooks/verify-signature', verifyBody, false));
    if (cases.includes('place'))
      add(`place ${tree.name}`, serviceSpec(service, '/api/public/v1/place-bet', betBody, true));
  }
  for (const t of targets) await runLoad({ ...t.spec, name: 'warm-up', durationS: 2 });
  for (let s = 0; s < slices; s++) {
    // Alternate the order every slice, so no target always follows the same one.
    const order = s % 2 === 0 ? targets : [...targets].reverse();
    for (const t of order) {
      const r: CaseResult = await runLoad({ ...t.spec, name: t.label, durationS: sliceS });
      if (r.non2xx + r.errors > 0)
        throw new Error(`${t.label}: ${r.non2xx} non-2xx, ${r.errors} errors; ${r.errorSamples[0] ?? ''}`);
      const responses = r.ok2xx + r.non2xx;
      t.totals.responses += responses;
      t.totals.seconds += r.durationS;
      t.totals.cpuUs += (r.cpuUsPerReq ?? 0) * responses;
      t.rps.push(r.rps);
    }
    log(`slice ${s + 1}/${slices}: ${order.map((t) => `${t.label} ${t.rps.at(-1)!.toFixed(0)}`).join(', ')}`);
  }
  const bareRps = targets[0]!.totals.responses / targets[0]!.totals.seconds;
  const lines = ['| target | req/s | vs bare | server CPU µs/req | req/s per slice |', '|:--|--:|--:|--:|:--|'];
  for (const t of targets) {
    const rps = t.totals.responses / t.totals.seconds;
    const cpu = t.totals.cpuUs / t.totals.responses;
    const perSlice = t.rps.map((v) => v.toFixed(0)).join(' ');
    const ratio = ((100 * rps) / bareRps).toFixed(1);
    lines.push(`| ${t.label} | ${rps.toFixed(0)} | ${ratio}% | ${cpu.toFixed(1)} | ${perSlice} |`);
  }
  process.stdout.write(
    `${slices} slices of ${sliceS} s per target, -c ${connections}; base = ${trees[0]!.root}\n${lines.join('\n')}\n`,
  );
} finally {
  await bare?.stop();
  for (const s of services) await s.stop();
}
