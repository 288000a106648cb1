// Fails when a line of the project's code is longer than 120 characters (the limit in .editorconfig and
// biome.jsonc). Biome's formatter keeps code within it but cannot break a string or template literal, and
// Biome has no lint rule for line length; see docs/dependencies.md for why this is a script and not a package.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const LIMIT = 120;
const root = fileURLToPath(new URL('..', import.meta.url));
const CODE = /\.(ts|mts|cts|js|mjs|cjs)$/;
// Generated from the OpenAPI document (npm run client:types); not edited by hand.
const GENERATED = new Set(['packages/client/src/openapi.ts']);

const files = execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' })
  .split('\0')
  .filter((f) => CODE.test(f) && !GENERATED.has(f));
const long = [];
for (const file of files) {
  // Characters, not UTF-16 units: "µ" or "→" counts once, as an editor's column does.
  readFileSync(`${root}${file}`, 'utf8')
    .split('\n')
    .forEach((line, i) => {
      const width = [...line].length;
      if (width > LIMIT) long.push(`${file}:${i + 1}: ${width} characters`);
    });
}
if (long.length > 0) {
  process.stderr.write(`${long.length} line(s) longer than ${LIMIT} characters:\n${long.join('\n')}\n`);
  process.exit(1);
}
