import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
  /** What the receiver answered (null while stalled or when the connection was dropped). */
  answered: number | null;
}

export type Answer = { status: number; headers?: Record<string, string>; body?: string };
export type Reply = Answer | 'stall';

function answer(entry: Received, res: ServerResponse, reply: Answer): void {
  entry.answered = reply.status;
  res.writeHead(reply.status, { 'content-type': 'text/plain', ...(reply.headers ?? {}) });
  res.end(reply.body ?? '');
}

/**
 * A local webhook receiver for tests: records every request and answers as `behaviour` decides
 * (per request, knowing how many this path has seen), or stalls without answering.
 */
export class TestReceiver {
  readonly received: Received[] = [];
  private server: Server | null = null;
  private stalled: { entry: Received; res: ServerResponse }[] = [];
  behaviour: (req: Received, nthForPath: number) => Reply = () => ({ status: 200, body: 'ok' });

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const entry: Received = {
          path: req.url ?? '/',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          at: Date.now(),
          answered: null,
        };
        this.received.push(entry);
        const nth = this.received.filter((r) => r.path === entry.path).length;
        const reply = this.behaviour(entry, nth);
        if (reply === 'stall') {
          this.stalled.push({ entry, res });
          return;
        }
        answer(entry, res, reply);
      });
    });
    this.server.keepAliveTimeout = 60_000;
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Sends `reply` to every request stalled so far, as if the receiver had only been slow. */
  answerStalled(reply: Answer): void {
    for (const { entry, res } of this.stalled.splice(0)) answer(entry, res, reply);
  }

  on(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  async close(): Promise<void> {
    for (const { res } of this.stalled) res.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}
