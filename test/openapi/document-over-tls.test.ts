import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/harness';

describe('OpenAPI document', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ engines: false });
  });
  afterAll(async () => t?.close());

  it('is OpenAPI 3.1, generated from the route schemas', async () => {
    const res = await request(`${t.baseUrl}/openapi.json`);
    const doc = (await res.body.json()) as any;
    expect(doc.openapi).toBe('3.1.0');
    const placeBet = doc.paths['/api/public/v1/place-bet'].post;
    expect(placeBet.requestBody.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/PlaceBetRequest',
    });
    expect(doc.components.schemas.PlaceBetRequest).toMatchObject({
      additionalProperties: false,
      required: ['external_user_id', 'amount'],
      properties: {
        amount: { type: 'integer', minimum: 1, maximum: 1_000_000 },
        external_user_id: { minLength: 1, maxLength: 120 },
      },
    });
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/api/public/v1/cashout', '/api/public/v1/rounds/current', '/fairness/crash']),
    );
  });

  it('serves a docs page', async () => {
    const res = await request(`${t.baseUrl}/docs/`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/text\/html/);
    expect(await res.body.text()).toMatch(/swagger/i);
  });
});

describe('native TLS', () => {
  let t: TestApp;
  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rbs-tls-'));
    const key = join(dir, 'key.pem');
    const cert = join(dir, 'cert.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
      ],
      {
        stdio: 'ignore',
      },
    );
    t = await startTestApp({ engines: false, env: { TLS_CERT_FILE: cert, TLS_KEY_FILE: key } });
  });
  afterAll(async () => t?.close());

  it('serves HTTPS when a certificate and key are configured', async () => {
    const url = t.baseUrl.replace('http://', 'https://');
    const res = await request(`${url}/healthz`, { dispatcher: new Agent({ connect: { rejectUnauthorized: false } }) });
    expect(res.statusCode).toBe(200);
    expect(await res.body.json()).toEqual({ ok: true });
    await expect(request(`${t.baseUrl}/healthz`)).rejects.toThrow();
  });
});
