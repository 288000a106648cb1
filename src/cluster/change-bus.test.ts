import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PG_URL } from '../../test/support/harness';
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
