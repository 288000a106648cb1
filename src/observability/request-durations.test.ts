import { Histogram, Registry, type RegistryContentType } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { RequestDurationHistogram } from './request-durations';

const BOUNDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const NAME = 'rbs_http_request_duration_seconds';
const HELP = 'Time from request received to response sent, by route pattern.';

/** Observations spread over every bucket, several series, bounds hit exactly and values past the last. */
function observations(): [string, string, number, number][] {
  const out: [string, string, number, number][] = [];
  const routes = ['/api/public/v1/place-bet', '/v1/rounds/:id', 'unmatched'];
  const values = [0, 0.0004, 0.001, 0.0011, 0.0025, 0.003, 0.0099, 0.05, 0.2, 0.7, 1, 3, 9.99, 10, 12.5, 60];
  for (let i = 0; i < 400; i++) {
    out.push([
      i % 5 === 0 ? 'GET' : 'POST',
      routes[i % 3]!,
      [200, 409, 429, 500][i % 4]!,
      values[i % values.length]! * (1 + i / 1e4),
    ]);
  }
  return out;
}

describe('RequestDurationHistogram', () => {
  it('exports exactly what prom-client’s Histogram exports for the same observations', async () => {
    // prom-client's types tie a registry to the Prometheus format unless declared otherwise, and a
    // Histogram only registers in such a registry; the format is switched at run time instead.
    const formats = [Registry.PROMETHEUS_CONTENT_TYPE, Registry.OPENMETRICS_CONTENT_TYPE] as RegistryContentType[];
    for (const contentType of formats as (typeof Registry.PROMETHEUS_CONTENT_TYPE)[]) {
      const reference = new Registry();
      reference.setContentType(contentType);
      const histogram = new Histogram({
        name: NAME,
        help: HELP,
        labelNames: ['method', 'route', 'status_code'],
        buckets: BOUNDS,
        registers: [reference],
      });
      const ours = new Registry();
      ours.setContentType(contentType);
      const recorder = new RequestDurationHistogram(NAME, HELP, BOUNDS, [ours]);
      for (const [method, route, status, seconds] of observations()) {
        histogram.observe({ method, route, status_code: status }, seconds);
        recorder.observe(method, route, status, seconds);
      }
      expect(await ours.metrics()).toBe(await reference.metrics());
      expect(await ours.getMetricsAsJSON()).toEqual(await reference.getMetricsAsJSON());
    }
  });

  it('starts empty, and empties again on reset', async () => {
    const registry = new Registry();
    const recorder = new RequestDurationHistogram(NAME, HELP, BOUNDS, [registry]);
    expect(await registry.metrics()).toBe(`# HELP ${NAME} ${HELP}\n# TYPE ${NAME} histogram\n`);
    recorder.observe('POST', '/x', 200, 0.002);
    expect(await registry.metrics()).toContain(`${NAME}_count{method="POST",route="/x",status_code="200"} 1`);
    registry.resetMetrics();
    expect(await registry.metrics()).toBe(`# HELP ${NAME} ${HELP}\n# TYPE ${NAME} histogram\n`);
  });
});
