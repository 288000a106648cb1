/**
 * Starts bench/minimal-server.ts on a fresh store: the reference every per-request figure is set
 * beside. `mode` is what it serves; `seededBets` active bets b0000000… wait for cash-outs.
 */
import { type Child, freshStore, startChild, type Store } from './processes';

export const MINIMAL_SECRET = `sk_${'m'.repeat(43)}`;
export const MINIMAL_API_KEY = 'pk_minimal';

export interface MinimalServer {
  child: Child;
  store: Store;
  /** The id of the i-th seeded bet. */
  betId(i: number): string;
  stop(): Promise<void>;
}

export async function startMinimalServer(o: {
  mode: 'signed' | 'place' | 'cashout';
  pgUrl: string | null;
  seededBets?: number;
  nodeArgs?: string[];
}): Promise<MinimalServer> {
  const store = await freshStore(o.pgUrl);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    MODE: o.mode,
    BENCH_SECRET: MINIMAL_SECRET,
    DATA_DIR: store.dataDir,
    CASHOUT_BETS: String(o.seededBets ?? 0),
  };
  if (store.databaseUrl) env.DATABASE_URL = store.databaseUrl;
  else delete env.DATABASE_URL;
  try {
    const child = await startChild('bench/minimal-server.ts', env, o.nodeArgs ?? []);
    return {
      child,
      store,
      betId: (i) => `b${String(i).padStart(7, '0')}`,
      async stop() {
        await child.stop();
        await store.dispose();
      },
    };
  } catch (error) {
    await store.dispose().catch(() => {});
    throw error;
  }
}
