/** Something a subscriber holds open (an SSE response): closed when the instance shuts down. */
export interface OpenStream {
  close(): void;
}

/**
 * Streams one holder may keep open at once in this process. Each stream holds a socket and a feed
 * subscription, so a leaked launch link, a dashboard cookie or one captured signed GET (reads are not
 * replay-checked) must not open a thousand of them.
 */
export const STREAM_ALLOWANCE = {
  /** A player session: a few tabs. */
  playerSession: 3,
  /** A dashboard user: each page holds one feed per game, so a few tabs in a few browsers. */
  dashboardUser: 10,
  /** An operator on the API surfaces: its servers relay the feed to their players, from a few processes. */
  operator: 20,
} as const;

export interface LiveStreamOptions {
  /**
   * How often an open stream asks whether its holder may still watch (a dashboard session signed out, an
   * operator disabled): such a change on any instance ends the stream within this time.
   */
  recheckMs?: number;
}

/**
 * The live-feed streams this instance holds open: one per app (built by src/app.ts), so two apps
 * in one process (tests, a sandbox next to a live service) never count or close each other's.
 */
export class LiveStreams {
  private readonly open = new Set<OpenStream>();
  private readonly held = new Map<string, number>();
  readonly recheckMs: number;

  constructor(options: LiveStreamOptions = {}) {
    this.recheckMs = options.recheckMs ?? 10_000;
  }

  /** Takes one of the holder's slots; false (nothing taken) when it already holds `max`. */
  tryHold(holder: string, max: number): boolean {
    const count = this.held.get(holder) ?? 0;
    if (count >= max) return false;
    this.held.set(holder, count + 1);
    return true;
  }

  /** Gives back a slot taken with tryHold. */
  release(holder: string): void {
    const left = (this.held.get(holder) ?? 1) - 1;
    if (left > 0) this.held.set(holder, left);
    else this.held.delete(holder);
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
