// Copies what the compiled service reads from beside its modules at run time (SQL, the dashboard's
// static files, worker scripts, ...) from src/ to dist/, keeping each file's relative path, so
// `new URL('./x', import.meta.url)` finds the same file in both. Anything the compiler does not
// emit is an asset, so a new kind of file needs no change here.
import { cpSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const compiledByTsc = /\.(?:c|m)?tsx?$/;

cpSync(`${root}src`, `${root}dist`, {
  recursive: true,
  filter: (source) => statSync(source).isDirectory() || !compiledByTsc.test(source),
});
