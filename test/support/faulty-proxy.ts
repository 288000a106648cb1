import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';

/**
 * What the proxy does with one request:
 * - `pass`: forward it and answer with the service's answer;
 * - `lose-answer`: forward it (the service applies it) and then cut the connection, as a network
 *   failure after the write would;
 * - `cut`: cut the connection without forwarding;
 * - `{status, headers}`: answer this itself without forwarding (a 503 from a load balancer, a 429).
 */
export type Fault =
  | 'pass'
  | 'lose-answer'
  | 'cut'
  | { status: number; headers?: Record<string, string>; body?: string };

export interface Seen {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/** A proxy in front of a real service that misbehaves on the requests it is told to. */
export class FaultyProxy {
  readonly seen: Seen[] = [];
  private server: Server | null = null;
  /** Faults for the next requests, in order; once empty, everything passes. */
  faults: Fault[] = [];

  constructor(private readonly target: string) {}

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', async () => {
        const body = Buffer.concat(chunks).toString('utf8');
        this.seen.push({
          method: req.method ?? 'GET',
          path: req.url ?? '/',
          headers: req.headers,
          body,
          at: Date.now(),
        });
        const fault = this.faults.shift() ?? 'pass';
        if (fault === 'cut') return void req.socket.destroy();
        if (typeof fault === 'object') {
          res.writeHead(fault.status, { 'content-type': 'application/json', ...(fault.headers ?? {}) });
          return void res.end(fault.body ?? '{}');
        }
        const headers = { ...req.headers };
        delete headers.host;
        delete headers.connection;
        const upstream = await request(`${this.target}${req.url}`, {
          method: req.method as 'GET',
          headers,
          body: body || undefined,
        });
        const text = await upstream.body.text();
        if (fault === 'lose-answer') return void req.socket.destroy();
        const out: Record<string, string> = {};
        for (const [k, v] of Object.entries(upstream.headers))
          if (typeof v === 'string' && k !== 'transfer-encoding' && k !== 'connection') out[k] = v;
        res.writeHead(upstream.statusCode, out);
        res.end(text);
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}
