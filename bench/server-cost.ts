/**
 * What a microsecond of server work costs in the ratio `npm run bench` reports, on this machine.
 * The bare Fastify server runs with a fixed busy loop added to each request (0, 25, 50 µs by default)
 * and is loaded exactly as the bench loads it (same client, same connections, client and server on
 * the same cores). Prints each variant's req/s, its share of the unmodified server's req/s, its CPU
 * per request and, under the V8 profiler, the socket-write time per request.
 *
 *   npx tsx bench/server-cost.ts [--spins 0,25,50] [--duration 8] [--connections 50]
 *
 * On two shared cores the socket writes grow dearer as the server gets busier (the client is more
 * often asleep and must be woken for each answer), so an added 50 µs costs more than 50 µs.
 */
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runLoad } from './load';
import { startChild } from './processes';
import { summarizeProfile } from './profile';

const { values: flags } = parseArgs({
  options: {
    spins: { type: 'string', default: '0,25,50' },
    duration: { type: 'string', default: '8' },
    connections: { type: 'string', default: '50' },
  },
});
const spins = flags.spins!.split(',').map(Number);
const durationS = Number(flags.duration);
const betBody = (i: number): string => `{"external_user_id":"p${String(i % 10_000).padStart(5, '0')}","amount":100}`;

let base = 0;
for (const spin of spins) {
  const dir = mkdtempSync(join(tmpdir(), 'rbs-spin-'));
  const env = { ...process.env, BENCH_BARE_SPIN_US: String(spin) };
  const child = await startChild('bench/bare-fastify.ts', env, ['--cpu-prof', `--cpu-prof-dir=${dir}`]);
  const spec = {
    baseUrl: child.baseUrl,
    path: '/bare',
    body: betBody,
    mimicHeaders: true,
    connections: Number(flags.connections),
    serverPid: child.proc.pid,
    serverEnded: child.ended,
  };
  await runLoad({ ...spec, name: 'warm-up', durationS: 2 });
  const r = await runLoad({ ...spec, name: `spin ${spin}`, durationS });
  await child.stop();
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  const writev = file
    ? summarizeProfile(join(dir, file), 40, (durationS + 1) * 1000).find((l) => /\swritev$/.test(l))
    : undefined;
  const writevMs = writev ? Number(writev.trim().split(/\s+/)[0]) : Number.NaN;
  if (spin === spins[0]) base = r.rps;
  process.stdout.write(
    `+${spin} µs/request: ${r.rps.toFixed(0)} req/s, ${((100 * r.rps) / base).toFixed(1)}% of +${spins[0]} µs, ` +
      `server CPU ${r.cpuUsPerReq?.toFixed(0) ?? 'n/a'} µs/req, ` +
      `socket writes ${((1000 * writevMs) / r.ok2xx).toFixed(1)} µs/req\n`,
  );
}
