import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PG_URL } from '../../test/support/harness';
import { targetOf, TcpRelay, throughRelay } from '../../test/support/tcp-relay';
import { PostgresDatabase } from '../store/postgres';
import { PostgresChangeBus } from './change-bus';

/** Deployments sharing one PostgreSQL database, each in its own schema named in the URL's search_path. */
describe('PostgresChangeBus channels per schema', () => {
  const schemas = [`bus_${randomBytes(5).toString('hex')}`, `bus_${randomBytes(5).toString('hex')}`];
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(sql).finally(() => c.end());
  };
  const urlFor = (schema: string) => `${PG_URL}?options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  const open: { db: PostgresDatabase; bus: PostgresChangeBus }[] = [];
  const busFor = (schema: string) => {
    const db = new PostgresDatabase({ connectionString: urlFor(schema), poolSize: 2 });
    const bus = new PostgresChangeBus(db);
    open.push({ db, bus });
    return bus;
  };

  beforeAll(async () => {
    for (const s of schemas) await admin(`CREATE SCHEMA ${s}`);
  });
  afterAll(async () => {
    for (const { db, bus } of open) {
      await bus.close();
      await db.close();
    }
    for (const s of schemas) await admin(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
  });

  it('delivers to instances on the same schema and never to another deployment', async () => {
    const publisher = busFor(schemas[0]!);
    const sameDeployment = busFor(schemas[0]!);
    const otherDeployment = busFor(schemas[1]!);
    const heard = { same: [] as string[], other: [] as string[] };
    sameDeployment.subscribe('operators', (p) => heard.same.push(p));
    otherDeployment.subscribe('operators', (p) => heard.other.push(p));
    await sameDeployment.ready();
    await otherDeployment.ready();

    await publisher.publish('operators', 'op_1');
    const deadline = Date.now() + 2_000;
    while (heard.same.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    // Anything for the other deployment would have arrived by now, on the same server.
    await new Promise((r) => setTimeout(r, 300));
    expect(heard).toEqual({ same: ['op_1'], other: [] });
  });
});

/**
 * The LISTEN connection stalls (packets dropped on the way, a host gone without a reset): no error comes,
 * NOTIFYs just stop. The bus notices by its ping going unanswered, listens again on a new connection and
 * tells its subscribers to start over, and what is published after that arrives.
 */
describe('PostgresChangeBus on a LISTEN connection that stalls', () => {
  const schema = `bus_${randomBytes(5).toString('hex')}`;
  const relay = new TcpRelay(targetOf(PG_URL, 5432));
  const admin = new PostgresDatabase({ connectionString: PG_URL, poolSize: 1 });
  let db: PostgresDatabase;
  let bus: PostgresChangeBus;

  beforeAll(async () => {
    await admin.run(`CREATE SCHEMA ${schema}`);
    const port = await relay.start();
    db = new PostgresDatabase({ connectionString: throughRelay(PG_URL, port), schema, poolSize: 1, timeoutMs: 300 });
    bus = new PostgresChangeBus(db, undefined, 50, 100);
  });
  afterAll(async () => {
    await bus.close();
    await db.close();
    await relay.kill();
    await admin.run(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.close();
  });

  it('notices the silence by its ping, listens again and resyncs, and hears what comes after', async () => {
    const heard: string[] = [];
    let resyncs = 0;
    bus.subscribe('operators', (p) => heard.push(p));
    bus.onResync(() => resyncs++);
    await bus.ready();
    expect(resyncs).toBe(1);

    relay.frozen = true;
    // Longer than a ping period and its timeout: the ping that went out while frozen goes unanswered.
    await new Promise((r) => setTimeout(r, 600));
    relay.frozen = false;
    const deadline = Date.now() + 5_000;
    while (resyncs < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(resyncs).toBe(2);

    // Published on the server directly, on the channel the bus listens to again.
    const channel = `rbs_${schema}_operators`;
    await admin.run('SELECT pg_notify(?, ?)', [channel, 'op_after']);
    while (!heard.includes('op_after') && Date.now() < deadline + 2_000) await new Promise((r) => setTimeout(r, 20));
    expect(heard).toContain('op_after');
  });
});
