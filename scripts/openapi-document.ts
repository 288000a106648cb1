/**
 * Prints the service's OpenAPI document (what GET /openapi.json serves) without opening a port or
 * starting the engines: `npx tsx scripts/openapi-document.ts [out-file]`. The client package's types
 * are generated from it, and the linter reads it.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp } from '../src/app';
import { loadConfig } from '../src/config/config';

export async function openApiDocument(env: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const dataDir = mkdtempSync(join(tmpdir(), 'rbs-openapi-'));
  try {
    const config = loadConfig({
      APP_ENV: 'test',
      LOG_LEVEL: 'silent',
      DATA_DIR: dataDir,
      RUN_ENGINES: 'false',
      MASTER_KEY: randomBytes(32).toString('hex'),
      ...env,
    });
    const app = await createApp(config);
    try {
      const res = await app.http.inject({ method: 'GET', url: '/openapi.json' });
      if (res.statusCode !== 200) throw new Error(`GET /openapi.json answered ${res.statusCode}`);
      return res.json() as Record<string, unknown>;
    } finally {
      await app.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const text = `${JSON.stringify(await openApiDocument(), null, 2)}\n`;
  const out = process.argv[2];
  if (out) writeFileSync(out, text);
  else process.stdout.write(text);
}
