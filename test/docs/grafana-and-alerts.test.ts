import { readFileSync } from 'node:fs';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/harness';
import { parsePrometheusText } from '../support/prometheus-text';

const dashboard = JSON.parse(readFileSync(new URL('../../docs/grafana/dashboard.json', import.meta.url), 'utf8'));
const operations = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');

/** Every PromQL expression of the dashboard's panels. */
const dashboardQueries = (): string[] =>
  dashboard.panels.flatMap((p: { targets?: { expr: string }[] }) => (p.targets ?? []).map((t) => t.expr));

const metricNames = (text: string): string[] => [...new Set(text.match(/\brbs_[a-zA-Z0-9_]+/g) ?? [])];

/** A dashboards and alerts that query a name the service does not export show nothing, silently. */
describe('the Grafana dashboard and the documented alerts query metrics that exist', () => {
  let t: TestApp;
  let families: Map<string, string>;

  beforeAll(async () => {
    t = await startTestApp({ engines: false });
    const res = await request(`${t.baseUrl}/metrics`);
    families = parsePrometheusText(await res.body.text()).types;
  });
  afterAll(async () => t?.close());

  const exported = (name: string): boolean => {
    if (families.has(name)) return true;
    const base = name.replace(/_(bucket|sum|count)$/, '');
    return base !== name && (families.get(base) === 'histogram' || families.get(base) === 'summary');
  };

  it('every metric the dashboard queries is in GET /metrics', () => {
    const names = metricNames(dashboardQueries().join('\n'));
    expect(names.length).toBeGreaterThan(10);
    expect(names.filter((n) => !exported(n))).toEqual([]);
  });

  it('every metric named in docs/operations.md (table and alert rules) is in GET /metrics', () => {
    // rbs_process_* and rbs_nodejs_* name families of defaults, not metrics.
    const names = metricNames(operations).filter((n) => !/^rbs_(process|nodejs)_$/.test(n));
    expect(names.filter((n) => !exported(n))).toEqual([]);
  });

  it("every one of the service's own metrics is documented and on the dashboard", () => {
    const own = [...families.keys()].filter((n) => !/^rbs_(process|nodejs)_/.test(n));
    expect(own.length).toBe(10);
    const queried = dashboardQueries().join('\n');
    expect(own.filter((n) => !operations.includes(`\`${n}\``))).toEqual([]);
    expect(own.filter((n) => !queried.includes(n))).toEqual([]);
  });
});
