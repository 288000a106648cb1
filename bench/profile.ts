/**
 * Reads a V8 .cpuprofile (from `node --cpu-prof`) and reports where the time went: self time by
 * function, self time by package or source file, and inclusive time of the project's own functions.
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const IDLE = new Set(['(idle)', '(program)']);

function shortUrl(url: string): string {
  if (!url) return '';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) return url.slice(nm + '/node_modules/'.length);
  const src = url.search(/\/(src|bench)\//);
  if (src >= 0) return url.slice(src + 1);
  return url.replace(/^file:\/\//, '');
}

function area(url: string, fn: string): string {
  if (!url) return fn.startsWith('(') ? fn : '(native)';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + '/node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  const src = url.search(/\/(src|bench)\//);
  if (src >= 0) return url.slice(src + 1);
  if (url.startsWith('node:')) return url.split('/')[0]!.replace(/^node:internal.*/, 'node:internal');
  return url;
}

const label = (n: ProfileNode): string => {
  const fn = n.callFrame.functionName || '(anonymous)';
  const url = shortUrl(n.callFrame.url);
  return url ? `${fn} ${url}:${n.callFrame.lineNumber + 1}` : fn;
};

/**
 * `lastMs`: keep only the profile's last milliseconds (the measured run, which ends just before the
 * service is stopped), so start-up and warm-up do not dilute the shares. 0 keeps everything.
 */
export function summarizeProfile(file: string, top = 15, lastMs = 0): string[] {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  const lengthUs = profile.timeDeltas.reduce((sum, d) => sum + d, 0);
  const skipUs = lastMs > 0 ? Math.max(0, lengthUs - lastMs * 1000) : 0;
  let elapsedUs = 0;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    elapsedUs += delta;
    if (elapsedUs >= skipUs) self.set(id, (self.get(id) ?? 0) + delta);
  });

  const totalOf = new Map<number, number>();
  const total = (id: number): number => {
    const cached = totalOf.get(id);
    if (cached !== undefined) return cached;
    const n = byId.get(id)!;
    const t = (self.get(id) ?? 0) + (n.children ?? []).reduce((sum, c) => sum + total(c), 0);
    totalOf.set(id, t);
    return t;
  };

  let all = 0;
  let idle = 0;
  const selfByFn = new Map<string, number>();
  const selfByArea = new Map<string, number>();
  for (const n of profile.nodes) {
    const us = self.get(n.id) ?? 0;
    all += us;
    if (IDLE.has(n.callFrame.functionName)) {
      idle += us;
      continue;
    }
    selfByFn.set(label(n), (selfByFn.get(label(n)) ?? 0) + us);
    const a = area(n.callFrame.url, n.callFrame.functionName);
    selfByArea.set(a, (selfByArea.get(a) ?? 0) + us);
  }
  const busy = all - idle;

  // Inclusive time per project function, counted once per stack even when it recurses.
  const inclusive = new Map<string, number>();
  const onStack = new Map<string, number>();
  const walk = (id: number): void => {
    const n = byId.get(id)!;
    const key = /\/src\//.test(n.callFrame.url) ? label(n) : null;
    const fresh = key !== null && !onStack.get(key);
    if (key !== null) {
      if (fresh) inclusive.set(key, (inclusive.get(key) ?? 0) + total(id));
      onStack.set(key, (onStack.get(key) ?? 0) + 1);
    }
    for (const c of n.children ?? []) walk(c);
    if (key !== null) onStack.set(key, onStack.get(key)! - 1);
  };
  walk(profile.nodes[0]!.id);

  const pct = (us: number): string => `${((100 * us) / busy).toFixed(1).padStart(5)}%`;
  const ms = (us: number): string => `${(us / 1000).toFixed(0).padStart(7)} ms`;
  const rank = (m: Map<string, number>, k: number): string[] =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, k)
      .map(([name, us]) => `  ${ms(us)} ${pct(us)}  ${name}`);

  return [
    `profile ${file}${skipUs > 0 ? ` (its last ${(lastMs / 1000).toFixed(1)} s: the measured run)` : ''}`,
    `sampled ${(all / 1000).toFixed(0)} ms, busy ${(busy / 1000).toFixed(0)} ms ` +
      `(${((100 * busy) / all).toFixed(0)}%); percentages are of busy time`,
    'self time by package / file:',
    ...rank(selfByArea, top),
    'self time by function:',
    ...rank(selfByFn, top),
    'inclusive time of project functions:',
    ...rank(inclusive, top),
  ];
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  for (const f of process.argv.slice(2)) console.log(summarizeProfile(f).join('\n'));
}
