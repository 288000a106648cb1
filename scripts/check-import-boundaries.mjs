// Runs dependency-cruiser with .dependency-cruiser.cjs and fails on any violation not recorded in
// import-boundaries.known-violations.json. `--update` rewrites that file from today's code.
//
// dependency-cruiser's own `--ignore-known` does not apply to folder-level rules (version 17 leaves them
// unsoftened), so the baseline is applied here. A folder cycle counts as known when every folder-to-folder
// edge on it was already part of a recorded cycle: a cycle made only of old edges existed before, while a new
// cycle needs at least one new edge. Import-rule violations are known by (rule, from, to).
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const baselinePath = `${root}import-boundaries.known-violations.json`;

const run = spawnSync(
  process.execPath,
  [
    `${root}node_modules/dependency-cruiser/bin/dependency-cruise.mjs`,
    'src',
    '-c',
    '.dependency-cruiser.cjs',
    '-T',
    'json',
  ],
  { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
);
if (run.status !== 0 && !run.stdout.startsWith('{')) {
  process.stderr.write(run.stderr || run.stdout);
  process.exit(run.status ?? 1);
}
const result = JSON.parse(run.stdout);
const violations = result.summary.violations;

/** A folder cycle from A is reported as `from: A, cycle: [B, ..., A]`: its edges are A->B, B->..., ...->A. */
const cycleEdges = (v) => {
  const path = [v.from, ...v.cycle.map((step) => step.name)];
  return path.slice(1).map((to, i) => `${path[i]} -> ${to}`);
};
const importKey = (v) => `${v.rule.name}: ${v.from} -> ${v.to}`;
const isFolderCycle = (v) => v.type === 'cycle' && v.rule.name === 'folder-cycle';

if (process.argv.includes('--update')) {
  const baseline = {
    purpose:
      'Import-boundary violations present when the boundaries were introduced. The restructure removes them; ' +
      'this list may only shrink. Regenerate with `npm run lint:baseline` after removing some.',
    // Every folder edge that lies on some cycle, not only the cycles reported, so that a change elsewhere
    // that makes the report pick another old cycle does not read as new.
    // The reported cycles are added too: they may run through nested folders the summary lists apart.
    folderCycleEdges: [
      ...new Set([
        ...result.folders.flatMap((folder) =>
          folder.dependencies.filter((to) => to.circular).map((to) => `${folder.name} -> ${to.name}`),
        ),
        ...violations.filter(isFolderCycle).flatMap(cycleEdges),
      ]),
    ].sort(),
    importViolations: [...new Set(violations.filter((v) => !isFolderCycle(v)).map(importKey))].sort(),
  };
  writeFileSync(baselinePath, `${JSON.stringify(baseline, null, 2)}\n`);
  console.log(
    `recorded ${baseline.folderCycleEdges.length} cyclic folder edges and ` +
      `${baseline.importViolations.length} import violations in ${baselinePath.slice(root.length)}`,
  );
  process.exit(0);
}

const baseline = JSON.parse(readFileSync(baselinePath, 'utf8'));
const knownEdges = new Set(baseline.folderCycleEdges);
const knownImports = new Set(baseline.importViolations);

const fresh = violations.filter((v) =>
  isFolderCycle(v) ? !cycleEdges(v).every((edge) => knownEdges.has(edge)) : !knownImports.has(importKey(v)),
);
for (const v of fresh) {
  const detail = isFolderCycle(v)
    ? `${v.from} -> ${v.cycle.map((step) => step.name).join(' -> ')}`
    : `${v.from} -> ${v.to}`;
  console.error(`import boundary broken (${v.rule.name}): ${detail}`);
}

// Where SQL is written ("Engineering decisions" in docs/decisions.md): repositories (`*-repository.ts`), the
// one-unit command files (`*-commands.ts`), the store, and the infrastructure exceptions listed there. Imports
// cannot tell this (every service imports the store's `Database` type to open a transaction and pass `tx`),
// so the statements themselves are looked for: a string or template literal that starts with one.
const SQL_HOMES = [/-repository\.ts$/, /-commands\.ts$/, /^src\/store\//];
const SQL_EXCEPTIONS = new Set([
  'src/ops/readiness.ts', // the store health probe (SELECT 1)
  'src/cluster/change-bus.ts', // LISTEN/NOTIFY plumbing (pg_notify, current_schema)
]);
const SQL_STATEMENT = /[`'"]\s*(?:SELECT\s|INSERT\s+INTO\s|UPDATE\s+\w+\s+SET\s|DELETE\s+FROM\s|WITH\s+\w+\s+AS\s*\()/g;
const sourceFiles = (dir) =>
  readdirSync(`${root}${dir}`, { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') && !path.endsWith('.test.ts') && !path.endsWith('.d.ts') ? [path] : [];
  });
const misplacedSql = [];
for (const file of sourceFiles('src')) {
  if (SQL_HOMES.some((home) => home.test(file)) || SQL_EXCEPTIONS.has(file)) continue;
  const text = readFileSync(`${root}${file}`, 'utf8');
  for (const match of text.matchAll(SQL_STATEMENT)) {
    const line = text.slice(0, match.index).split('\n').length;
    misplacedSql.push(`${file}:${line}: ${match[0].trim()}…`);
  }
}
for (const where of misplacedSql) console.error(`SQL outside a repository: ${where}`);

if (fresh.length > 0) {
  console.error(`${fresh.length} new import-boundary violation(s); see "Import direction" in docs/architecture.md`);
}
if (misplacedSql.length > 0) {
  console.error(
    `${misplacedSql.length} SQL statement(s) outside a repository; move them into the aggregate's *-repository.ts ` +
      '(docs/decisions.md, "Engineering decisions")',
  );
}
if (fresh.length > 0 || misplacedSql.length > 0) process.exit(1);
