import type { OutgoingHttpHeaders } from 'node:http';
import type { Writable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Game } from '../games/engine/round';
import { encodeFrame, type FeedListener, type LiveFeed } from '../games/engine/live-feed';
import { type LiveStreams, STREAM_ALLOWANCE } from '../games/engine/live-streams';
import type { OperatorService } from '../operators/operators';
import { HttpProblem } from './surface/http-problem';

/**
 * The 200 of a live-feed route as the document gives it: a text/event-stream, not a JSON body (the
 * stream is written to the socket; no serializer reads this).
 */
export const EVENT_STREAM = {
  description: 'Server-Sent Events: a snapshot of the current round first, then every change',
  content: {
    'text/event-stream': {
      schema: { type: 'string', description: 'event: <name>\ndata: <JSON>\n\n, repeated' },
    },
  },
};

/** Who may watch a stream, and for how long. */
export interface StreamTerms {
  /** The allowance the stream counts against: `max` streams per `key` (a session, a user, an operator). */
  holder: { key: string; max: number; name: string };
  /**
   * Asked every `streams.recheckMs` while the stream is open: false ends it. Access checked only when a
   * stream opens would outlive a sign-out or a disabled operator by hours. A store that cannot answer
   * leaves the stream open until the next check.
   */
  stillAllowed?: () => Promise<boolean>;
  /** The stream ends this many milliseconds from now (the session's expiry). */
  endsInMs?: number;
}

/**
 * Serves a game's live feed as Server-Sent Events: a snapshot first, then every change. The stream
 * is tracked by the app's `streams` (closed at shutdown). A stream beyond the holder's allowance is
 * refused (429, before anything is streamed).
 */
export async function streamFeed(
  req: FastifyRequest,
  reply: FastifyReply,
  streams: LiveStreams,
  feed: Pick<LiveFeed, 'snapshot' | 'subscribe'>,
  game: Game,
  terms: StreamTerms,
): Promise<void> {
  // The stream is written to the socket past Fastify's reply, so the headers the request gathered on
  // its way (the rate-limit ones after the bucket, a deprecation notice) are carried over by hand.
  const headers: OutgoingHttpHeaders = Object.assign({}, reply.getHeaders() as OutgoingHttpHeaders, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    'x-request-id': String(req.id),
  });
  // HEAD (Fastify answers it with the GET handler): the headers a stream would have, then the end. A
  // stream has no body to leave out, so it would otherwise hold a slot and never send its headers.
  if (req.method === 'HEAD') {
    reply.hijack();
    reply.raw.writeHead(200, headers);
    reply.raw.end();
    return;
  }
  const { holder } = terms;
  if (!streams.tryHold(holder.key, holder.max)) {
    throw new HttpProblem(
      'RATE_LIMITED',
      `this ${holder.name} already has ${holder.max} live streams open; close one before opening another`,
      { 'retry-after': '5' },
    );
  }
  let released = false;
  // Whatever happens below, the slot is given back when the client's connection goes.
  reply.raw.once('close', () => {
    if (released) return;
    released = true;
    streams.release(holder.key);
  });
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, headers);
  const write = feedWriter(res);
  res.write('retry: 2000\n\n');
  const snapshot = await feed.snapshot(game);
  if (snapshot) res.write(encodeFrame(snapshot));
  const unsubscribe = feed.subscribe(game, write);
  const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), 15_000);
  const recheck = terms.stillAllowed ? watchAccess(terms.stillAllowed, streams.recheckMs, () => res.end()) : null;
  const expiry =
    terms.endsInMs === undefined
      ? null
      : setTimeout(() => res.end(), Math.min(Math.max(0, terms.endsInMs), 2 ** 31 - 1));
  expiry?.unref();
  const untrack = streams.track({ close: () => res.end() });
  const cleanup = (): void => {
    clearInterval(heartbeat);
    if (recheck) clearInterval(recheck);
    if (expiry) clearTimeout(expiry);
    unsubscribe();
    untrack();
  };
  req.raw.on('close', cleanup);
  res.on('close', cleanup);
}

/**
 * Bytes a viewer's connection may hold unsent before its ticks are skipped: the next tick supersedes
 * a skipped one, and round transitions still go out. About a hundred ticks.
 */
export const SKIP_TICKS_ABOVE_BYTES = 32 * 1024;
/**
 * Past this the viewer is disconnected (its client reconnects after the `retry` delay and starts from a
 * snapshot), so a stalled reader costs at most this much memory, never a growing queue.
 */
export const DISCONNECT_ABOVE_BYTES = 256 * 1024;

/**
 * Writes the feed's frames, already encoded once for every viewer, to one viewer's connection without
 * ever waiting on it: a slow reader loses ticks, then its connection, not the others' time.
 */
export function feedWriter(res: Pick<Writable, 'writableLength' | 'write' | 'destroy'>): FeedListener {
  return (batch) => {
    const unsent = res.writableLength;
    if (unsent > DISCONNECT_ABOVE_BYTES) {
      res.destroy();
      return;
    }
    if (unsent <= SKIP_TICKS_ABOVE_BYTES) res.write(batch.frame);
    else if (batch.roundFrame) res.write(batch.roundFrame);
  };
}

/**
 * An API stream's terms: the operator's allowance, and the operator still there and enabled (a disable
 * refuses its new requests at once and, with this, ends the streams it already holds).
 */
export function operatorStreamTerms(operatorId: string, operators: Pick<OperatorService, 'isActive'>): StreamTerms {
  return {
    holder: { key: `operator:${operatorId}`, max: STREAM_ALLOWANCE.operator, name: 'operator' },
    stillAllowed: () => operators.isActive(operatorId),
  };
}

function watchAccess(stillAllowed: () => Promise<boolean>, everyMs: number, end: () => void): NodeJS.Timeout {
  let asking = false;
  const timer = setInterval(() => {
    if (asking) return;
    asking = true;
    stillAllowed()
      .then(
        (allowed) => {
          if (!allowed) end();
        },
        () => {},
      )
      .finally(() => {
        asking = false;
      });
  }, everyMs);
  timer.unref();
  return timer;
}
