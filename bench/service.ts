/**
 * One service under test: a fresh store, an operator created with the admin CLI (with a rate limit
 * high enough that the bench measures the service, not the limiter), and `src/main.ts` running as a
 * child process on a free port.
 */
import { admin, freshStore, serviceEnv, startChild, type Child, type Store } from './processes';

export interface BenchOperator {
  id: string;
  apiKey: string;
  apiSecret: string;
}

export interface BenchService {
  child: Child;
  store: Store;
  env: NodeJS.ProcessEnv;
  operator: BenchOperator;
  /** Stops the child (SIGTERM, graceful) and drops the PostgreSQL schema; returns the exit code. */
  stop(): Promise<number | null>;
}

export const UNLIMITED = JSON.stringify({ rate_limit: { refill_per_second: 1_000_000, burst: 1_000_000 } });

export async function startService(options: {
  pgUrl: string | null;
  env?: Record<string, string>;
  nodeArgs?: string[];
  /** The checkout whose service runs (and whose admin CLI sets it up); this one by default. */
  root?: string;
}): Promise<BenchService> {
  const store = await freshStore(options.pgUrl);
  const env = serviceEnv(store, options.env);
  try {
    // Created before the service starts: its credential cache never sees the key as unknown.
    // --init: the store is new. A checkout from before that flag refuses it, and creates the store unasked.
    const create = ['operator', 'create', '--name', 'bench'];
    const created = await admin(env, [...create, '--init'], options.root).catch(() => admin(env, create, options.root));
    await admin(env, ['operator', 'settings', '--id', created.operator_id, '--json', UNLIMITED], options.root);
    const operator = {
      id: String(created.operator_id),
      apiKey: String(created.api_key),
      apiSecret: String(created.api_secret),
    };
    const child = await startChild('src/main.ts', env, options.nodeArgs ?? [], options.root);
    return {
      child,
      store,
      env,
      operator,
      async stop() {
        const code = await child.stop();
        await store
          .dispose()
          .catch((e: Error) => process.stderr.write(`could not drop the bench store: ${e.message}\n`));
        return code;
      },
    };
  } catch (error) {
    await store.dispose().catch(() => {});
    throw error;
  }
}
