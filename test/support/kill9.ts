import { randomBytes } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DEFAULT_BUSTABIT_SALT } from '../../src/config/game-defaults';
import { crashPointOf } from '../../src/games/crash/crash-rules';
import type { ChildService } from './child-service';
import type { client } from './harness';
import type { Received } from './webhook-receiver';

/** What the kill -9 matrix tests share: seeds with known crash points, a recording wallet, event counts. */

/** `count` seeds whose Crash rounds bust between `min` and `max` hundredths (bustabit salt). */
export function seedsBusting(min: number, max: number, count: number): string[] {
  const seeds: string[] = [];
  while (seeds.length < count) {
    const seed = randomBytes(32).toString('hex');
    const point = crashPointOf(seed, DEFAULT_BUSTABIT_SALT, 100);
    if (point >= min && point <= max) seeds.push(seed);
  }
  return seeds;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A fresh Idempotency-Key under a readable label. */
export const key = (label: string) => `${label}-${randomBytes(6).toString('hex')}`;

export type Call = ReturnType<typeof client>;

/**
 * The operator's wallet as the service sees it: records every settle call and answers 200, except that
 * `hold` may keep one call's answer back until the test sends it (`answerHeld`).
 */
export class RecordingWallet {
  readonly received: Received[] = [];
  hold: ((req: Received) => boolean) | null = null;
  private held: ServerResponse | null = null;
  private server: Server | null = null;

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
        if (this.hold?.(entry)) {
          this.held = res;
          return;
        }
        entry.answered = 200;
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  answerHeld(): void {
    this.held?.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    this.held = null;
  }

  on(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

/** The bet.settled deliveries a webhook receiver saw, by bet: every event id it was sent under, and the payloads. */
export function settledHooks(received: Received[], path: string) {
  const byBet = new Map<string, { ids: Set<string>; payloads: any[] }>();
  for (const r of received.filter((x) => x.path === path)) {
    const event = JSON.parse(r.body);
    if (event.type !== 'bet.settled') continue;
    const entry = byBet.get(event.data.bet_id) ?? { ids: new Set<string>(), payloads: [] };
    entry.ids.add(event.id);
    entry.payloads.push(event.data);
    byBet.set(event.data.bet_id, entry);
  }
  return byBet;
}

/** Counts bet.settled events in the store per bet: the operator's record of what each bet was paid. */
export async function settledEventsPerBet(svc: ChildService): Promise<Map<string, number>> {
  const rows = await svc.rows<{ data: string }>(`SELECT data FROM events WHERE type = 'bet.settled'`);
  const counts = new Map<string, number>();
  for (const row of rows) {
    const betId = JSON.parse(row.data).bet_id as string;
    counts.set(betId, (counts.get(betId) ?? 0) + 1);
  }
  return counts;
}
