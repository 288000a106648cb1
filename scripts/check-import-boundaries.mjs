// Runs dependency-cruiser with .dependency-cruiser.cjs and fails on any violation not recorded in
// import-boundaries.known-violations.json. `--update` rewrites that file from today's code.
//
// dependency-cruiser's own `--ignore-known` does not apply to folder-level rules (version 17 leaves them
// unsoftened), so the baseline is applied here. A folder cycle counts as known when every folder-to-folder
// edge on it was already part of a recorded cycle: a cycle made only of old edges existed before, while a new
// cycle needs at least one new edge. Import-rule violations are known by (rule, from, to).
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
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
if (fresh.length > 0) {
  console.error(`${fresh.length} new import-boundary violation(s); see "Import direction" in docs/architecture.md`);
  process.exit(1);
}
