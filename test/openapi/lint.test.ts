import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/harness';

const run = promisify(execFile);
const redoclyBin = join(createRequire(import.meta.url).resolve('@redocly/cli/package.json'), '..', 'bin', 'cli.js');

interface LintProblem {
  ruleId: string;
  severity: 'error' | 'warn';
  message: string;
  location: { pointer: string }[];
}

/** What tools read: the served /openapi.json, linted by @redocly/cli with its recommended rules. */
describe('the served OpenAPI document', () => {
  let t: TestApp;
  let doc: any;
  beforeAll(async () => {
    t = await startTestApp({ engines: false, env: { PUBLIC_BASE_URL: 'https://bets.example.test' } });
    doc = await (await fetch(`${t.baseUrl}/openapi.json`)).json();
  });
  afterAll(async () => t?.close());
  /** The object a local `$ref` points at (#/components/<kind>/<name>), or the node itself. */
  const followed = (node: any): any => {
    const ref = /^#\/components\/(\w+)\/(.+)$/.exec(node?.$ref ?? '');
    return ref ? doc.components[ref[1]!][ref[2]!] : node;
  };

  it('passes `redocly lint` (recommended ruleset) with no errors', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'rbs-openapi-')), 'openapi.json');
    writeFileSync(file, JSON.stringify(doc));
    // The linter exits 1 when it finds errors; its JSON report is on stdout either way.
    const out = await run(
      process.execPath,
      [redoclyBin, 'lint', file, '--extends=recommended', '--format=json', '--max-problems=1000'],
      {
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
        maxBuffer: 64 * 1024 * 1024,
      },
    ).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
    const report = JSON.parse(out.stdout) as { problems: LintProblem[] };
    const errors = report.problems
      .filter((p) => p.severity === 'error')
      .map((p) => `${p.ruleId} ${p.location[0]?.pointer}: ${p.message}`);
    expect(errors).toEqual([]);
  }, 120_000);

  it('names the deployment in `servers` and describes both signing schemes as security schemes', () => {
    expect(doc.servers).toEqual([expect.objectContaining({ url: 'https://bets.example.test' })]);
    const schemes = doc.components.securitySchemes;
    expect(schemes.partnerApiKey).toMatchObject({ type: 'apiKey', in: 'header', name: 'x-api-key' });
    expect(schemes.partnerSignature).toMatchObject({ type: 'apiKey', in: 'header', name: 'x-signature' });
    expect(schemes.operatorKey).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-Operator-Key' });
    expect(schemes.operatorTimestamp).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-Timestamp' });
    expect(doc.paths['/api/public/v1/place-bet'].post.security).toEqual([
      { partnerApiKey: [], partnerSignature: [], partnerTimestamp: [] },
    ]);
    expect(doc.paths['/v1/bets/reserve'].post.security).toEqual([
      { operatorKey: [], operatorSignature: [], operatorTimestamp: [] },
    ]);
    expect(doc.paths['/v1/webhook-endpoints'].post.security).toEqual([
      { operatorKey: [], operatorSignature: [], operatorTimestamp: [] },
    ]);
    expect(doc.paths['/fairness/crash'].get.security).toEqual([]);
    expect(doc.webhooks['bet.settled'].post.security).toContainEqual({ serviceSignature: [] });
  });

  it('leaves the HTML pages out', () => {
    const html = Object.keys(doc.paths).filter((p) => p.startsWith('/dashboard') || p.startsWith('/play'));
    expect(html).toEqual([]);
  });

  it('publishes the idempotency keys as required: the reserve body field and the Surface A POST header', () => {
    const schema = followed(doc.paths['/v1/bets/reserve'].post.requestBody.content['application/json'].schema);
    expect(schema.required).toContain('idempotency_key');
    for (const path of ['/api/public/v1/place-bet', '/api/public/v1/cashout']) {
      const parameters = (doc.paths[path].post.parameters as object[]).map(followed) as {
        in: string;
        name: string;
        required: boolean;
      }[];
      expect(parameters.find((p) => p.in === 'header' && p.name === 'idempotency-key')?.required, path).toBe(true);
    }
  });

  it('says which POSTs take no body: rotate-secret, test and resend may be sent without one', () => {
    const optional = [
      '/api/public/v1/webhook-endpoints/{endpoint_id}/rotate-secret',
      '/api/public/v1/webhook-endpoints/{endpoint_id}/test',
      '/api/public/v1/webhook-deliveries/{delivery_id}/resend',
      '/v1/webhook-endpoints/{endpoint_id}/test',
    ];
    for (const path of optional) expect(doc.paths[path].post.requestBody.required, path).toBe(false);
    for (const path of ['/api/public/v1/place-bet', '/v1/sessions/launch', '/api/public/v1/webhook-endpoints']) {
      expect(doc.paths[path].post.requestBody.required, path).toBe(true);
    }
  });
});
