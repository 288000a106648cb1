/**
 * The JS cost of the signed request path, without sockets: the service's own Fastify instance,
 * driven with `inject()` in batches the size of the bench's connection count, on one event loop.
 * Prints process CPU per request for the signed no-store route (verify-signature), place-bet,
 * and a bare Fastify route driven the same way, so the difference is what the pipeline adds.
 * Far less noisy than the HTTP bench on a shared machine; compare trees with interleaved runs.
 *
 *   npx tsx bench/pipeline-cost.ts [--requests 20000] [--rounds 5] [--batch 50] [--only bare,signed,place]
 *                                  [--profile out.cpuprofile] [--allocations out.heapprofile]
 *
 * --profile writes a V8 CPU profile of the measured rounds only (after the warm-up), for
 * `npx tsx bench/profile.ts out.cpuprofile`; --allocations a sampled heap profile of the same
 * rounds (every allocation, collected or not), which Chrome DevTools opens.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createApp } from '../src/app';
import { loadConfig } from '../src/config/config';
import { signRequest } from '../src/signing/request-signature';
import { BENCH_MASTER_KEY } from './processes';

const { values: flags } = parseArgs({
  options: {
    requests: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '5' },
    batch: { type: 'string', default: '50' },
    only: { type: 'string', default: 'bare,signed,place' },
    profile: { type: 'string' },
    allocations: { type: 'string' },
  },
});
const requests = Number(flags.requests);
const rounds = Number(flags.rounds);
const batch = Number(flags.batch);
const only = new Set(flags.only!.split(','));

/** User + system CPU of the process (every thread: the GC's and the store's count too), in µs. */
function cpuUs(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

type Build = (i: number) => { path: string; headers: Record<string, string>; body: string };

async function measure(app: FastifyInstance, build: Build, count: number): Promise<number> {
  const before = cpuUs();
  for (let done = 0; done < count; done += batch) {
    const pending = [];
    for (let k = 0; k < batch; k++) {
      const r = build(done + k);
      pending.push(app.inject({ method: 'POST', url: r.path, headers: r.headers, payload: r.body }));
    }
    for (const res of await Promise.all(pending)) {
      if (res.statusCode !== 200) throw new Error(`${res.statusCode} ${res.body}`);
    }
  }
  return (cpuUs() - before) / count;
}

const dataDir = mkdtempSync(join(tmpdir(), 'rbs-pipeline-cost-'));
const config = loadConfig({
  APP_ENV: 'development',
  LOG_LEVEL: 'warn',
  MASTER_KEY: BENCH_MASTER_KEY,
  DATA_DIR: dataDir,
  FAIR_CHAIN_LENGTH: '2000',
  CRASH_BETTING_WINDOW_MS: '600000',
  PORT: '0',
});
const service = await createApp(config);
const bare = Fastify({ logger: false });
bare.post('/bare', async (req) => {
  const body = req.body as { external_user_id?: string; amount?: number };
  return { ok: true, external_user_id: body.external_user_id ?? null, amount: body.amount ?? null };
});
try {
  await service.startBackground();
  const created = await service.services.operators.create({ name: 'pipeline-cost' });
  await service.services.operators.updateSettings(created.id, { rate_limit: { refill_per_second: 1e6, burst: 1e6 } });
  const signed = (path: string, body: string, idempotency: boolean) => {
    const timestamp = String(Date.now());
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'x-api-key': created.apiKey,
      'x-timestamp': timestamp,
      'x-signature': signRequest(created.apiSecret, 'POST', path, timestamp, body),
    };
    if (idempotency) headers['idempotency-key'] = randomUUID();
    return { path, headers, body };
  };
  const cases: [string, FastifyInstance, Build][] = [];
  const betBody = (i: number) => `{"external_user_id":"p${String(i % 10_000).padStart(5, '0')}","amount":100}`;
  if (only.has('bare')) {
    cases.push([
      'bare',
      bare,
      (i) => ({ path: '/bare', headers: signed('/bare', betBody(i), true).headers, body: betBody(i) }),
    ]);
  }
  let n = 0;
  if (only.has('signed')) {
    const path = '/api/public/v1/webhooks/verify-signature';
    cases.push([
      'signed',
      service.http,
      () => signed(path, `{"endpoint_secret":"whsec_bench_${n++}","body":"{}","signature":"t=1,v1=00"}`, false),
    ]);
  }
  if (only.has('place'))
    cases.push(['place', service.http, (i) => signed('/api/public/v1/place-bet', betBody(i), true)]);
  const results = new Map<string, number[]>();
  for (const [, app, build] of cases) await measure(app, build, Math.min(requests, 5000));
  const session = flags.profile || flags.allocations ? new Session() : null;
  session?.connect();
  if (flags.profile) {
    await session!.post('Profiler.setSamplingInterval', { interval: 100 });
    await session!.post('Profiler.enable');
    await session!.post('Profiler.start');
  }
  if (flags.allocations) {
    // Every sampled allocation, the ones young-generation GCs already collected included.
    await session!.post('HeapProfiler.startSampling', {
      samplingInterval: 256,
      includeObjectsCollectedByMinorGC: true,
      includeObjectsCollectedByMajorGC: true,
    });
  }
  for (let r = 0; r < rounds; r++) {
    for (const [name, app, build] of cases) {
      const us = await measure(app, build, requests);
      results.set(name, [...(results.get(name) ?? []), us]);
    }
  }
  if (flags.allocations) {
    const { profile } = await session!.post('HeapProfiler.stopSampling');
    writeFileSync(flags.allocations, JSON.stringify(profile));
  }
  if (flags.profile) {
    const { profile } = await session!.post('Profiler.stop');
    writeFileSync(flags.profile, JSON.stringify(profile));
  }
  session?.disconnect();
  for (const [name, values] of results) {
    const sorted = [...values].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)]!;
    // The minimum is the run least disturbed by other work on the machine.
    const runs = values.map((v) => v.toFixed(1)).join(' ');
    console.log(`${name.padEnd(7)} min ${sorted[0]!.toFixed(1)} median ${median.toFixed(1)} µs/req (runs: ${runs})`);
  }
} finally {
  await service.stop();
  await bare.close();
  rmSync(dataDir, { recursive: true, force: true });
}
