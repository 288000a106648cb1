/**
 * Builds the package for both module systems with two passes of the TypeScript compiler: dist/esm
 * (ES modules, the source's own format) and dist/cjs (CommonJS, for `require`). Each half carries its
 * own declarations, so TypeScript resolves the right ones for `import` and for `require`, and
 * dist/cjs/package.json marks that folder as CommonJS for Node and for TypeScript.
 */
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

rmSync(`${root}dist`, { recursive: true, force: true });
for (const project of ['tsconfig.json', 'tsconfig.cjs.json']) {
  execFileSync(process.execPath, [tsc, '-p', `${root}${project}`], { stdio: 'inherit' });
}
writeFileSync(`${root}dist/cjs/package.json`, `${JSON.stringify({ type: 'commonjs' })}\n`);
