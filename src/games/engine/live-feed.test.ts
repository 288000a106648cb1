import pino from 'pino';
import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { noCompliance } from '../../bets/compliance-hooks';
import { FakeClock } from '../../clock/clock';
import { DEFAULT_BUSTABIT_SALT } from '../../config/game-defaults';
import { OperatorModes } from '../../operators/operator-mode';
import { OperatorService } from '../../operators/operators';
import { SecretBox } from '../../operators/secret-box';
import { migrate } from '../../store/migrate';
import { SqliteDatabase } from '../../store/sqlite';
import { seedCrashFixtureChain } from '../../../test/support/fair-chains';
import { CrashGame } from '../crash/crash-game';
import { RoundEngine } from './engine';
import { FairChainService } from './fair-chain';
import { type FeedMessage, LiveFeed } from './live-feed';

// bustabit v2 game #1394725: crashes at 3.77x, far past the instants these tests look at.
const SEED_377 = 'b459e199bac1342bf22d7aa6d19180aff35ab69f453d809949aab3e8d5e545aa';
const WINDOW = 5_000;
const TICK = 100;

/** Polls a condition on real time (the feed's fan-out and a follower's store poll run on the event loop). */
async function until(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('live feed', () => {
  let db: SqliteDatabase;
  let clock: FakeClock;
  const engines: RoundEngine[] = [];
  const feeds: LiveFeed[] = [];

  function crashEngine(): RoundEngine {
    const logger = pino({ level: 'silent' });
    const modes = new OperatorModes();
    const operators = new OperatorService(db, new SecretBox(randomBytes(32)), clock, 1000);
    const game = new CrashGame({
      db,
      logger,
      compliance: noCompliance,
      modes,
      settingsOf: async (id) => (await operators.get(id)).settings,
      bettingWindowMs: WINDOW,
      pauseMs: 1_000,
      tickMs: TICK,
      salt: DEFAULT_BUSTABIT_SALT,
      houseEdgeBp: 100,
    });
    const chain = new FairChainService(db, () => 10, { clock, logger, autoContribute: true, allowFixtures: true });
    const engine = new RoundEngine({ db, clock, driver: game, logger, modes, chain, leaseCheckMs: 60_000 });
    engines.push(engine);
    return engine;
  }

  function feedOf(engine: RoundEngine, pollMs = 500): LiveFeed {
    const feed = new LiveFeed(db, clock, [engine], pollMs);
    feeds.push(feed);
    feed.start();
    return feed;
  }

  beforeEach(async () => {
    clock = new FakeClock(1_800_000_000_000);
    db = new SqliteDatabase({ filename: ':memory:' });
    await migrate(db);
    await seedCrashFixtureChain(db, [SEED_377], DEFAULT_BUSTABIT_SALT);
  });

  afterEach(async () => {
    for (const feed of feeds.splice(0)) feed.stop();
    for (const engine of engines.splice(0)) await engine.stop();
    await db.close();
  });

  it("gives the tick a follower shows before the leader's first one its multiplier", async () => {
    const leader = crashEngine();
    const follower = crashEngine();
    await leader.start();
    await clock.advanceAsync(WINDOW);
    // 32 ms into the round: the leader has not ticked yet, and no tick came over the bus.
    await clock.advanceAsync(32);
    const seen: FeedMessage[] = [];
    feedOf(follower, 10).subscribe('crash', (batch) => seen.push(...batch.messages));
    await until(() => seen.some((m) => m.event === 'tick'));
    const tick = seen.find((m) => m.event === 'tick')!;
    expect(follower.isLeader).toBe(false);
    expect(tick.data).toMatchObject({ round_number: 1, at: clock.now(), elapsed_ms: 32, multiplier: 1 });
  });

  it("hands the engine's ticks to every subscriber in order, after the engine's step and in slices", async () => {
    const engine = crashEngine();
    const feed = feedOf(engine);
    const viewers = 2_000;
    const received: FeedMessage[][] = Array.from({ length: viewers }, () => []);
    const frames: Buffer[][] = Array.from({ length: viewers }, () => []);
    // How many viewers held the first message when work queued by the first viewer's callback ran.
    let heldWhenOtherWorkRan = -1;
    for (const [i, list] of received.entries()) {
      feed.subscribe('crash', (batch) => {
        list.push(...batch.messages);
        frames[i]!.push(batch.frame);
        if (i === 0 && frames[0]!.length === 1) {
          setImmediate(() => {
            heldWhenOtherWorkRan = received.filter((l) => l.length > 0).length;
          });
        }
      });
    }
    // Heard by the engine right after the feed: by then not one viewer holds the message, since the
    // fan-out runs off the engine's step.
    const heldWhenEmitted: number[] = [];
    engine.on((e) => {
      const k = heldWhenEmitted.length;
      if (e.type !== 'engine.error') heldWhenEmitted.push(received.filter((list) => list.length > k).length);
    });
    await engine.start();
    await clock.advanceAsync(WINDOW);
    // Other work of the event loop ran between slices of one message's fan-out.
    await until(() => heldWhenOtherWorkRan >= 0);
    expect(heldWhenOtherWorkRan).toBeGreaterThan(0);
    expect(heldWhenOtherWorkRan).toBeLessThan(viewers);
    for (let t = 0; t < 5; t++) await clock.advanceAsync(TICK);
    await until(() => received.every((list) => list.length === 2 + 5));
    const expected = received[0]!.map((m) => `${m.event}:${String(m.data.status ?? m.data.elapsed_ms)}`);
    expect(expected).toEqual([
      'round:open',
      'round:running',
      'tick:100',
      'tick:200',
      'tick:300',
      'tick:400',
      'tick:500',
    ]);
    for (const list of received) expect(list).toEqual(received[0]);
    expect(heldWhenEmitted).toEqual([0, 0, 0, 0, 0, 0, 0]);
    // Encoded once: every subscriber was handed the very same buffers, which are the messages' SSE frames.
    for (const list of frames) expect(list.every((frame, k) => frame === frames[0]![k])).toBe(true);
    const sse = received[0]!.map((m) => `event: ${m.event}\ndata: ${JSON.stringify(m.data)}\n\n`).join('');
    expect(Buffer.concat(frames[0]!).toString()).toBe(sse);
  });
});
