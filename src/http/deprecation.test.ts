import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { announceDeprecations } from './deprecation';

describe('deprecation headers', () => {
  it('announces a deprecated route with Deprecation, Sunset and Link, and leaves others alone', async () => {
    const app = Fastify();
    announceDeprecations(app);
    app.get(
      '/old',
      {
        config: {
          deprecation: {
            since: new Date('2026-01-01T00:00:00Z'),
            sunset: new Date('2026-07-01T00:00:00Z'),
            link: 'https://example.test/v2',
          },
        },
      },
      async () => ({ ok: true }),
    );
    app.get('/new', async () => ({ ok: true }));
    const old = await app.inject({ method: 'GET', url: '/old' });
    expect(old.headers.deprecation).toBe('@1767225600');
    expect(old.headers.sunset).toBe('Wed, 01 Jul 2026 00:00:00 GMT');
    expect(old.headers.link).toBe('<https://example.test/v2>; rel="deprecation"');
    const fresh = await app.inject({ method: 'GET', url: '/new' });
    expect(fresh.headers.deprecation).toBeUndefined();
    expect(fresh.headers.sunset).toBeUndefined();
  });
});
