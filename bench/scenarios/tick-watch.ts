/**
 * The engine's cadence as a viewer sees it: the Surface A live feed (`GET /api/public/v1/rounds/stream`)
 * carries each tick's `elapsed_ms`, the engine's own clock when the tick began. The difference between
 * two consecutive ticks of a round is the gap the engine kept, whatever the delivery delay: a tick
 * held up by a slow store write shows as a large gap, a viewer that reads late does not.
 */
import { signRequest } from '../../src/signing/request-signature';
import type { BenchOperator } from '../service';

export interface SeenTick {
  roundNumber: number;
  elapsedMs: number;
}

export interface TickWatch {
  ticks: SeenTick[];
  /** The largest gap between consecutive ticks of the round (ms), counted from its start (elapsed 0). */
  largestGap(roundNumber: number, fromElapsedMs?: number, toElapsedMs?: number): { gapMs: number; ticks: number };
  stop(): Promise<void>;
}

const STREAM = '/api/public/v1/rounds/stream';

export async function watchTicks(baseUrl: string, op: BenchOperator): Promise<TickWatch> {
  const timestamp = String(Date.now());
  const abort = new AbortController();
  const res = await fetch(`${baseUrl}${STREAM}`, {
    headers: {
      'x-api-key': op.apiKey,
      'x-timestamp': timestamp,
      'x-signature': signRequest(op.apiSecret, 'GET', STREAM, timestamp, ''),
      accept: 'text/event-stream',
    },
    signal: abort.signal,
  });
  if (res.status !== 200 || !res.body) throw new Error(`the live feed answered ${res.status}`);
  const ticks: SeenTick[] = [];
  const reading = (async () => {
    const decoder = new TextDecoder();
    let buffered = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffered += decoder.decode(chunk, { stream: true });
        for (let end = buffered.indexOf('\n\n'); end >= 0; end = buffered.indexOf('\n\n')) {
          const message = buffered.slice(0, end);
          buffered = buffered.slice(end + 2);
          if (!message.startsWith('event: tick\n')) continue;
          const data = JSON.parse(message.slice(message.indexOf('data: ') + 6)) as {
            round_number: number;
            elapsed_ms: number;
          };
          ticks.push({ roundNumber: Number(data.round_number), elapsedMs: Number(data.elapsed_ms) });
        }
      }
    } catch (error) {
      if (!abort.signal.aborted) throw error;
    }
  })();
  return {
    ticks,
    largestGap(roundNumber, fromElapsedMs = 0, toElapsedMs = Number.POSITIVE_INFINITY) {
      const seen = ticks
        .filter((t) => t.roundNumber === roundNumber && t.elapsedMs >= fromElapsedMs && t.elapsedMs <= toElapsedMs)
        .map((t) => t.elapsedMs)
        .sort((a, b) => a - b);
      let gapMs = 0;
      let previous = fromElapsedMs;
      for (const at of seen) {
        gapMs = Math.max(gapMs, at - previous);
        previous = at;
      }
      return { gapMs, ticks: seen.length };
    },
    async stop() {
      abort.abort();
      await reading.catch(() => {});
    },
  };
}
