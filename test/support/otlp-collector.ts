import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A span as the OTLP/HTTP JSON encoding sends it (the fields the tests read). */
export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: Record<string, unknown> }[];
  status?: { code?: number };
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  links?: { traceId: string; spanId: string }[];
}

export interface OtlpCollector {
  url: string;
  spans: OtlpSpan[];
  /** The Content-Type of every export received. */
  contentTypes: Set<string>;
  close(): Promise<void>;
}

/** An OTLP/HTTP collector in the test process: it keeps every span it is sent (JSON encoding). */
export async function startCollector(): Promise<OtlpCollector> {
  const spans: OtlpSpan[] = [];
  const contentTypes = new Set<string>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') {
        contentTypes.add(String(req.headers['content-type']));
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        for (const rs of body.resourceSpans ?? [])
          for (const ss of rs.scopeSpans ?? []) spans.push(...(ss.spans ?? []));
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    contentTypes,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
