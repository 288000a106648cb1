// Fails when code on the per-request or per-bet paths builds an object literal with a spread followed by
// anything else (`{ ...bet, status }`, `{ ...a, ...b }`). On Node 20's V8 that form leaves the fast clone
// path: 1.7 µs a call for a bet-sized object against under 0.1 µs for `{ ...bet }` alone or the fields
// written out, and up to 7 µs where it was measured inside the service (docs/decisions.md, the spread rule).
// Biome has no such rule and its GritQL plugins cannot yet match "a member after a spread" (no list
// patterns), so the check parses with @swc/core, the TypeScript parser the import-boundary check already uses.
//
// A literal that runs rarely (once per round, on a failure) may keep the spread: put a comment containing
// "spread-ok:" and the reason on the line above it.
import { parseSync } from '@swc/core';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';

// Folders whose code runs for every request, bet, cash-out, settlement or delivery.
const HOT = [
  'src/admission/',
  'src/bets/',
  'src/games/',
  'src/idempotency/',
  'src/outbox/',
  'src/signing/',
  'src/store/',
  'src/wallet/',
];
const root = fileURLToPath(new URL('..', import.meta.url));

// Files named on the command line are checked instead (the check's own test uses this).
const named = process.argv.slice(2);
const files =
  named.length > 0
    ? named
    : execFileSync('git', ['ls-files', '-z', ...HOT], { cwd: root, encoding: 'utf8' })
        .split('\0')
        .filter((f) => /\.(ts|mts)$/.test(f) && !/\.test\.ts$/.test(f))
        .map((f) => `${root}${f}`);

const found = [];
for (const file of files) {
  const source = readFileSync(file, 'utf8');
  // swc's spans are byte offsets that keep counting across the parses of a process, and a module's span starts
  // at its first token: a leading `0;` puts that token at the file's first byte, on the same line.
  const ast = parseSync(`0;${source}`, { syntax: 'typescript', target: 'es2022' });
  const bytes = Buffer.from(source, 'utf8');
  const lines = source.split('\n');
  const lineAt = (span) => bytes.subarray(0, span - ast.span.start - 2).toString('utf8').split('\n').length;
  const visit = (node) => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (!node || typeof node !== 'object') return;
    if (node.type === 'ObjectExpression') {
      const first = node.properties.findIndex((p) => p.type === 'SpreadElement');
      if (first !== -1 && first < node.properties.length - 1) {
        const line = lineAt(node.span.start);
        const marked = (lines[line - 2] ?? '').includes('spread-ok:');
        if (!marked) found.push(`${relative(root, file)}:${line}: ${lines[line - 1].trim()}`);
      }
    }
    for (const key of Object.keys(node)) if (key !== 'span') visit(node[key]);
  };
  visit(ast);
}
if (found.length > 0) {
  process.stderr.write(
    `${found.length} object literal(s) with a spread followed by more members on a hot path ` +
      `(write the fields out, or Object.assign onto a fresh object; see scripts/check-hot-path-spreads.mjs):\n` +
      `${found.join('\n')}\n`,
  );
  process.exit(1);
}
