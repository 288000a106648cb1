// Start-up time and resident memory of the two ways to run the service: the development path (tsx
// compiling src/ on the fly, what `npm start` runs) and the compiled build (`node dist/main.js`).
// Run `npm run build` first, then: node bench/startup.mjs [--runs 5]
// Each run starts one path on a fresh data directory and a free port, times the start until /healthz
// answers (and the CPU time its processes used until then: steadier than the wall time on a shared host),
// then reads the resident memory of its whole process tree (tsx runs the service in a child
// process) two seconds later, and stops it. The two paths take turns, so a change in the host's load
// during the measurement falls on both; the figures are medians.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const runsArg = process.argv.indexOf('--runs');
const runs = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 5;

const paths = {
  'tsx src/main.ts': [join(root, 'node_modules', '.bin', 'tsx'), 'src/main.ts'],
  'node dist/main.js': [process.execPath, 'dist/main.js'],
};

const freePort = () =>
  new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });

/** The process and every descendant, from /proc (Linux). */
function tree(pid) {
  const children = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const ppid = Number(readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1].split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // the process ended while the table was read
    }
  }
  const all = [pid];
  for (let i = 0; i < all.length; i++) all.push(...(children.get(all[i]) ?? []));
  return all;
}

/** User + system CPU milliseconds a process has used so far (clock ticks of 10 ms, as Linux counts them). */
function cpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

const rssKiB = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);

async function once([command, ...args]) {
  const dataDir = mkdtempSync(join(tmpdir(), 'rbs-startup-'));
  const port = await freePort();
  const started = performance.now();
  const child = spawn(command, args, {
    cwd: root,
    env: { ...process.env, APP_ENV: 'development', DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'warn' },
    stdio: 'ignore',
  });
  let readyMs;
  let readyCpuMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${command} ${args.join(' ')} exited with ${child.exitCode}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`);
      if (res.status === 200) {
        readyMs = performance.now() - started;
        readyCpuMs = tree(child.pid).reduce((sum, pid) => sum + cpuMs(pid), 0);
        break;
      }
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  await new Promise((r) => setTimeout(r, 2_000));
  const rss = tree(child.pid).reduce((sum, pid) => sum + rssKiB(pid), 0);
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
  rmSync(dataDir, { recursive: true, force: true });
  return { readyMs, readyCpuMs, rssMiB: rss / 1024 };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const spread = (xs, digits) =>
  `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}-${Math.max(...xs).toFixed(digits)})`;
const results = Object.fromEntries(Object.keys(paths).map((name) => [name, []]));
for (let i = 0; i < runs; i++) {
  for (const [name, argv] of Object.entries(paths)) {
    const result = await once(argv);
    results[name].push(result);
    console.error(
      `${name}: ready in ${result.readyMs.toFixed(0)} ms, ${result.readyCpuMs} ms CPU, ${result.rssMiB.toFixed(1)} MiB`,
    );
  }
}
console.log(`Node ${process.version}, ${runs} runs each, medians (min-max)`);
for (const [name, rows] of Object.entries(results)) {
  const ms = rows.map((r) => r.readyMs);
  const cpu = rows.map((r) => r.readyCpuMs);
  const mib = rows.map((r) => r.rssMiB);
  console.log(
    `${name.padEnd(18)} ready in ${spread(ms, 0)} ms, CPU until ready ${spread(cpu, 0)} ms,` +
      ` resident ${spread(mib, 1)} MiB`,
  );
}
