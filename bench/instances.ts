/**
 * `npm run bench -- --pg --instances N`: place-bet against N service processes on one PostgreSQL
 * database, the load split evenly between them (one autocannon target per instance, each with its
 * share of the connections), as clients behind a round-robin balancer would send it. The figure is
 * the combined throughput; the check after the run is that every acknowledged bet exists exactly once.
 */
import type { CaseResult, SigningIdentity } from './load';
import { runLoad } from './load';
import { admin, freshStore, serviceEnv, sleep, startChild, type Child } from './processes';
import { UNLIMITED } from './service';
import { openStore } from './store-peek';

export interface InstancesCaseOptions {
  pgUrl: string;
  instances: number;
  connections: number;
  durationS: number;
  warmupS: number;
  body: (i: number) => string;
  log: (line: string) => void;
}

export async function runInstancesCase(o: InstancesCaseOptions): Promise<{ rows: CaseResult[]; notes: string[] }> {
  const store = await freshStore(o.pgUrl);
  const env = serviceEnv(store, { CRASH_BETTING_WINDOW_MS: '600000' });
  const children: Child[] = [];
  const notes: string[] = [];
  const db = openStore(store);
  try {
    const created = await admin(env, ['operator', 'create', '--name', 'bench', '--init']);
    await admin(env, ['operator', 'settings', '--id', created.operator_id, '--json', UNLIMITED]);
    const identity: SigningIdentity = {
      apiKey: String(created.api_key),
      apiSecret: String(created.api_secret),
      headers: { key: 'x-api-key', signature: 'x-signature', timestamp: 'x-timestamp' },
      idempotencyHeader: true,
    };
    // One after the other: the first takes the engine leases, the others stand by.
    for (let i = 0; i < o.instances; i++) children.push(await startChild('src/main.ts', env));
    const perInstance = Math.max(1, Math.floor(o.connections / o.instances));
    const path = '/api/public/v1/place-bet';
    const acknowledged: string[] = [];
    const spec = (child: Child, name: string, collect: boolean) => ({
      name,
      baseUrl: child.baseUrl,
      path,
      body: o.body,
      identity,
      connections: perInstance,
      serverPid: child.proc.pid,
      serverEnded: child.ended,
      onResponse: collect
        ? (status: number, body: string) => {
            if (status === 200) acknowledged.push(String((JSON.parse(body) as { bet_id: string }).bet_id));
          }
        : undefined,
      durationS: o.durationS,
    });
    if (o.warmupS > 0) {
      await Promise.all(children.map((c, i) => runLoad({ ...spec(c, 'warm-up', false), durationS: o.warmupS })));
      await sleep(300);
    }
    const before = Number((await db.get<{ n: number }>('SELECT COUNT(*) AS n FROM bets'))?.n ?? 0);
    const results = await Promise.all(
      children.map((c, i) => runLoad(spec(c, `place-bet via instance ${i + 1}/${o.instances} (postgresql)`, true))),
    );
    await sleep(500);
    const stored = Number((await db.get<{ n: number }>('SELECT COUNT(*) AS n FROM bets'))?.n ?? 0) - before;

    // Every acknowledged bet_id is in the store, once (the id is the key: a second row cannot exist,
    // so "once" is about acknowledgements: no two responses may name the same bet).
    let found = 0;
    for (let i = 0; i < acknowledged.length; i += 500) {
      const batch = acknowledged.slice(i, i + 500);
      const placeholders = batch.map(() => '?').join(',');
      const row = await db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM bets WHERE id IN (${placeholders})`, batch);
      found += Number(row?.n ?? 0);
    }
    const distinct = new Set(acknowledged).size;
    const leases = await db.get<{ n: number }>(
      `SELECT COUNT(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND granted
         AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    );
    const combined: CaseResult = {
      ...results[0]!,
      name: `place-bet, ${o.instances} instances combined (postgresql)`,
      rps: results.reduce((s, r) => s + r.rps, 0),
      // Latency percentiles of the slowest instance: the combined distribution is not recorded.
      p50: Math.max(...results.map((r) => r.p50)),
      p99: Math.max(...results.map((r) => r.p99)),
      ok2xx: results.reduce((s, r) => s + r.ok2xx, 0),
      non2xx: results.reduce((s, r) => s + r.non2xx, 0),
      errors: results.reduce((s, r) => s + r.errors, 0),
      timeouts: results.reduce((s, r) => s + r.timeouts, 0),
      statusCodes: results.reduce<Record<string, number>>((all, r) => {
        for (const [code, n] of Object.entries(r.statusCodes)) all[code] = (all[code] ?? 0) + n;
        return all;
      }, {}),
      errorSamples: results.flatMap((r) => r.errorSamples).slice(0, 5),
      cpuUsPerReq: null,
      built: results.reduce((s, r) => s + r.built, 0),
      note:
        "combined: the sum of the instances' req/s; p50/p99 are the slowest instance's; " +
        'CPU per request is per instance',
    };
    const ok = found === acknowledged.length && distinct === acknowledged.length && stored >= acknowledged.length;
    const inFlight = stored - acknowledged.length;
    notes.push(
      `${o.instances}-instance store check: ${acknowledged.length} bets acknowledged (${distinct} distinct ids), ` +
        `${found} of them found in the store, ${stored} bets written during the run ` +
        `(${inFlight} committed while their response was in flight, at most ${perInstance * o.instances}) -> ` +
        (ok && inFlight <= perInstance * o.instances ? 'OK' : 'MISMATCH'),
      `${o.instances}-instance run: advisory locks held at the end: ${Number(leases?.n ?? 0)} ` +
        '(one per engine lease: 2 expected); ' +
        'on this 2-core machine the load generator and every instance share the cores, so the figure shows ' +
        'correctness under load, not throughput scaling (that needs one machine, or at least cores, per instance)',
    );
    return { rows: [...results, combined], notes };
  } finally {
    await db.close().catch(() => {});
    for (const c of children.reverse()) {
      const code = await c.stop();
      if (code !== 0) notes.push(`an instance exited with code ${code}`);
    }
    await store.dispose().catch((e: Error) => o.log(`could not drop the bench store: ${e.message}`));
  }
}
