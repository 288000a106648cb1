import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderWebhooksDoc, WEBHOOKS_DOC } from '../../scripts/webhook-docs';
import { WEBHOOK_TYPE_NAMES } from '../../src/webhooks/payloads';

describe('docs/webhooks.md payload tables', () => {
  const page = readFileSync(WEBHOOKS_DOC, 'utf8');

  // After a change to an event schema: `npm run docs:webhooks`.
  it('are what the event schemas generate', () => {
    expect(page).toBe(renderWebhooksDoc(page));
  });

  it('cover every event type', () => {
    for (const type of WEBHOOK_TYPE_NAMES)
      expect(page).toMatch(new RegExp(`^### .*\`${type.replace('.', '\\.')}\``, 'm'));
  });
});
