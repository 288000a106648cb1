/**
 * One process of the viewers scenario's load generator: holds a share of the live-feed connections
 * and records, per viewer, every tick it receives (the engine's `at` stamp and the lag to receipt).
 * Driven over stdin/stdout, one JSON object a line:
 *   in  {"cmd":"open", base, viewers: [{path, headers, game}], concurrency}  out {"type":"opened", …}
 *   in  {"cmd":"report", from, to, reference: {crash: [at…], stock_race: [at…]}}  out {"type":"report", …}
 *   in  {"cmd":"close"}: ends every connection and exits.
 */
import { request, type ClientRequest } from 'node:http';
import { createInterface } from 'node:readline';

export type ViewerGame = 'crash' | 'stock_race';

export interface ViewerSpec {
  path: string;
  headers: Record<string, string>;
  game: ViewerGame;
}

/** Lags are counted in 1 ms buckets up to this; later receipts go in the last bucket (max kept apart). */
export const LAG_BUCKETS = 10_000;

export interface ViewerReport {
  type: 'report';
  viewers: number;
  /** Still connected when the report was asked for. */
  held: number;
  /** Reference ticks of the window a viewer did not receive, summed over viewers. */
  lost: number;
  /** The most a single viewer lost. */
  mostLostByOne: number;
  viewersThatLost: number;
  /** Ticks in the window that are not among the reference ones (an instance's own, not the engine's). */
  extra: number;
  /** Crash ticks without a multiplier, Stock Race ticks without stocks. */
  withoutPayload: number;
  /** Ticks that came after a later one on the same stream. */
  outOfOrder: number;
  received: number;
  lagHistogram: number[];
  lagMax: number;
}

interface Viewer {
  spec: ViewerSpec;
  req: ClientRequest | null;
  open: boolean;
  ats: number[];
  lags: number[];
  withoutPayload: number;
  outOfOrder: number;
  lastAt: number;
  buffer: string;
}

const viewers: Viewer[] = [];
const out = (line: object): void => void process.stdout.write(`${JSON.stringify(line)}\n`);

/** The number after `"at":` in a tick's data, without parsing the whole JSON (the clients share the cores). */
function atOf(data: string): number {
  const i = data.indexOf('"at":');
  return i < 0 ? Number.NaN : Number.parseInt(data.slice(i + 5, i + 25), 10);
}

function onEvents(v: Viewer, chunk: string, receivedAt: number): void {
  v.buffer += chunk;
  for (let end = v.buffer.indexOf('\n\n'); end >= 0; end = v.buffer.indexOf('\n\n')) {
    const block = v.buffer.slice(0, end);
    v.buffer = v.buffer.slice(end + 2);
    if (!block.startsWith('event: tick\n')) continue;
    const data = block.slice(block.indexOf('data: ') + 6);
    const at = atOf(data);
    const payload = v.spec.game === 'crash' ? '"multiplier":' : '"stocks":';
    if (!data.includes(payload)) v.withoutPayload++;
    if (at < v.lastAt) v.outOfOrder++;
    v.lastAt = at;
    v.ats.push(at);
    v.lags.push(receivedAt - at);
  }
}

/** A connection not answered by then counts as refused: one lost SYN must not hold the whole run up. */
const ANSWER_WITHIN_MS = 60_000;

function openOne(base: URL, v: Viewer): Promise<string | null> {
  return new Promise((done) => {
    const timer = setTimeout(() => {
      req.destroy();
      done(`no answer within ${ANSWER_WITHIN_MS / 1000} s`);
    }, ANSWER_WITHIN_MS);
    const req = request(
      { host: base.hostname, port: base.port, path: v.spec.path, headers: v.spec.headers, agent: false },
      (res) => {
        clearTimeout(timer);
        res.setEncoding('utf8');
        if (res.statusCode !== 200) {
          let body = '';
          res.on('data', (c: string) => (body += c));
          res.on('end', () => done(`${res.statusCode} ${body.slice(0, 200)}`));
          return;
        }
        v.open = true;
        res.on('data', (c: string) => onEvents(v, c, Date.now()));
        res.on('close', () => (v.open = false));
        done(null);
      },
    );
    req.on('error', (e) => {
      clearTimeout(timer);
      v.open = false;
      done(e.message);
    });
    req.end();
    v.req = req;
  });
}

async function openAll(base: URL, specs: ViewerSpec[], concurrency: number): Promise<void> {
  const errors = new Map<string, number>();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < specs.length) {
      const v: Viewer = {
        spec: specs[next++]!,
        req: null,
        open: false,
        ats: [],
        lags: [],
        withoutPayload: 0,
        outOfOrder: 0,
        lastAt: 0,
        buffer: '',
      };
      viewers.push(v);
      const error = await openOne(base, v);
      if (error) errors.set(error, (errors.get(error) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  out({
    type: 'opened',
    ok: viewers.filter((v) => v.open).length,
    failed: viewers.filter((v) => !v.open).length,
    errors: [...errors].slice(0, 5).map(([e, n]) => `${n} x ${e}`),
  });
}

function report(from: number, to: number, reference: Record<ViewerGame, number[]>): void {
  const expected = { crash: new Set(reference.crash), stock_race: new Set(reference.stock_race) };
  const histogram = new Array<number>(LAG_BUCKETS + 1).fill(0);
  const r: ViewerReport = {
    type: 'report',
    viewers: viewers.length,
    held: 0,
    lost: 0,
    mostLostByOne: 0,
    viewersThatLost: 0,
    extra: 0,
    withoutPayload: 0,
    outOfOrder: 0,
    received: 0,
    lagHistogram: histogram,
    lagMax: 0,
  };
  for (const v of viewers) {
    if (v.open) r.held++;
    const want = expected[v.spec.game];
    const got = new Set<number>();
    for (const [i, at] of v.ats.entries()) {
      if (at < from || at > to) continue;
      got.add(at);
      r.received++;
      if (!want.has(at)) r.extra++;
      const lag = Math.max(0, v.lags[i]!);
      histogram[Math.min(LAG_BUCKETS, Math.floor(lag))]!++;
      r.lagMax = Math.max(r.lagMax, lag);
    }
    let lost = 0;
    for (const at of want) if (!got.has(at)) lost++;
    r.lost += lost;
    r.mostLostByOne = Math.max(r.mostLostByOne, lost);
    if (lost > 0) r.viewersThatLost++;
    r.withoutPayload += v.withoutPayload;
    r.outOfOrder += v.outOfOrder;
  }
  out(r);
}

const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  const msg = JSON.parse(line) as {
    cmd: string;
    base?: string;
    viewers?: ViewerSpec[];
    concurrency?: number;
    from?: number;
    to?: number;
    reference?: Record<ViewerGame, number[]>;
  };
  if (msg.cmd === 'open') void openAll(new URL(msg.base!), msg.viewers!, msg.concurrency ?? 100);
  else if (msg.cmd === 'report') report(msg.from!, msg.to!, msg.reference!);
  else if (msg.cmd === 'close') {
    for (const v of viewers) v.req?.destroy();
    process.exit(0);
  }
});
