/** Something a subscriber holds open (an SSE response): closed when the instance shuts down. */
export interface OpenStream {
  close(): void;
}

/**
 * Streams one player session may hold open at once (in this process): a few tabs, not a thousand
 * sockets opened with one leaked launch link. Each stream holds a socket and a feed subscription.
 */
export const MAX_STREAMS_PER_SESSION = 3;

/**
 * The live-feed streams this instance holds open: one per app (built by src/app.ts), so two apps
 * in one process (tests, a sandbox next to a live service) never count or close each other's.
 */
export class LiveStreams {
  private readonly open = new Set<OpenStream>();
  private readonly perSession = new Map<string, number>();

  constructor(readonly maxPerSession = MAX_STREAMS_PER_SESSION) {}

  /** Takes one of the session's slots; false (nothing taken) when it already holds `maxPerSession`. */
  tryHold(sessionId: string): boolean {
    const held = this.perSession.get(sessionId) ?? 0;
    if (held >= this.maxPerSession) return false;
    this.perSession.set(sessionId, held + 1);
    return true;
  }

  /** Gives back a slot taken with tryHold. */
  release(sessionId: string): void {
    const left = (this.perSession.get(sessionId) ?? 1) - 1;
    if (left > 0) this.perSession.set(sessionId, left);
    else this.perSession.delete(sessionId);
  }

  /** Tracks a stream until the returned function is called (when its client goes). */
  track(stream: OpenStream): () => void {
    this.open.add(stream);
    return () => {
      this.open.delete(stream);
    };
  }

  /** Ends every open stream, so a graceful shutdown does not wait on clients that never hang up. */
  closeAll(): void {
    for (const stream of this.open) stream.close();
    this.open.clear();
  }
}
