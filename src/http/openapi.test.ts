import { describe, expect, it } from 'vitest';
import { withNamedSchemas, withSharedHeaders } from './openapi';

const json = (schema: object) => ({ content: { 'application/json': { schema } } });
const bet = { title: 'Bet', type: 'object', properties: { id: { type: 'string' } }, required: ['id'] };

describe('withNamedSchemas', () => {
  it('moves each titled schema into components.schemas, innermost first, referenced from paths and webhooks', () => {
    const page = { title: 'BetPage', type: 'object', properties: { data: { type: 'array', items: bet } } };
    const event = {
      title: 'BetEvent',
      type: 'object',
      properties: { type: { const: 'bet.done', type: 'string' }, data: bet },
    };
    const document = withNamedSchemas({
      paths: {
        '/bets': { get: { responses: { 200: json(page) } } },
        '/bets/{id}': { get: { responses: { 200: json(bet), 400: json({ type: 'object' }) } } },
      },
      webhooks: { 'bet.done': { post: { requestBody: json(event) } } },
    });
    expect(document.paths['/bets'].get.responses[200]).toEqual(json({ $ref: '#/components/schemas/BetPage' }));
    expect(document.paths['/bets/{id}'].get.responses[200]).toEqual(json({ $ref: '#/components/schemas/Bet' }));
    // An untitled schema stays where it is.
    expect(document.paths['/bets/{id}'].get.responses[400]).toEqual(json({ type: 'object' }));
    expect(document.webhooks['bet.done'].post.requestBody).toEqual(json({ $ref: '#/components/schemas/BetEvent' }));
    expect((document as any).components.schemas).toEqual({
      Bet: bet,
      BetPage: { ...page, properties: { data: { type: 'array', items: { $ref: '#/components/schemas/Bet' } } } },
      // `const` is written as the one-value `enum` @fastify/swagger gives route schemas.
      BetEvent: {
        ...event,
        properties: { type: { enum: ['bet.done'], type: 'string' }, data: { $ref: '#/components/schemas/Bet' } },
      },
    });
  });

  it('refuses two different shapes under one name rather than publish a type that lies about one', () => {
    const other = { ...bet, properties: { id: { type: 'integer' } } };
    const document = {
      paths: { '/a': { get: { responses: { 200: json(bet) } } }, '/b': { get: { responses: { 200: json(other) } } } },
    };
    expect(() => withNamedSchemas(document)).toThrow(/two different schemas are named Bet/);
  });

  it('leaves data alone: a `title` inside an example or a default names nothing', () => {
    const schema = { type: 'object', default: { title: 'Bet' }, examples: [{ title: 'Bet' }] };
    const document = withNamedSchemas({ paths: { '/a': { get: { responses: { 200: json(schema) } } } } });
    expect(document.paths['/a'].get.responses[200]).toEqual(json(schema));
    expect((document as any).components.schemas).toEqual({});
  });
});

describe('withSharedHeaders', () => {
  it('declares a header repeated word for word once, and leaves a different one of the same name inline', () => {
    const retry = { schema: { type: 'string' }, description: 'seconds to wait' };
    const otherRetry = { schema: { type: 'string' }, description: 'something else' };
    const key = { in: 'header', name: 'x-api-key', required: true, schema: { type: 'string' } };
    const query = { in: 'query', name: 'limit', schema: { type: 'string' } };
    const document = withSharedHeaders({
      paths: {
        '/a': {
          get: { parameters: [key, query], responses: { 429: { description: '', headers: { 'retry-after': retry } } } },
        },
        '/b': {
          get: { parameters: [key], responses: { 503: { description: '', headers: { 'retry-after': otherRetry } } } },
        },
      },
    } as any) as any;
    expect(document.paths['/a'].get.parameters).toEqual([{ $ref: '#/components/parameters/header.x-api-key' }, query]);
    expect(document.paths['/b'].get.parameters).toEqual([{ $ref: '#/components/parameters/header.x-api-key' }]);
    expect(document.paths['/a'].get.responses[429].headers).toEqual({
      'retry-after': { $ref: '#/components/headers/retry-after' },
    });
    expect(document.paths['/b'].get.responses[503].headers).toEqual({ 'retry-after': otherRetry });
    expect(document.components).toEqual({
      headers: { 'retry-after': retry },
      parameters: { 'header.x-api-key': key },
    });
  });
});
