import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderTypes, TYPES_FILE } from '../../packages/client/scripts/generate-types';
import { openApiDocument } from '../../scripts/openapi-document';

describe('the client package types', () => {
  // After a route schema change: `npm run client:types`.
  it('are what openapi-typescript generates from the current /openapi.json', async () => {
    const expected = await renderTypes(await openApiDocument());
    expect(readFileSync(TYPES_FILE, 'utf8')).toBe(expected);
  }, 60_000);
});
