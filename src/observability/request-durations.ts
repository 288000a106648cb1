import type { Metric, Registry } from 'prom-client';

type DurationLabels = { method: string; route: string; status_code: number };

interface Series {
  labels: DurationLabels;
  /** Observations per bucket (not cumulative), in the order of the bounds. */
  counts: number[];
  sum: number;
  count: number;
}

/**
 * The HTTP request-duration histogram, one series per method, route pattern and status, exported to
 * a prom-client registry in exactly the form prom-client's own Histogram gives it (same lines, same
 * order, same sums).
 *
 * It exists because it is observed on every request: prom-client's `Histogram.observe` builds a
 * label-hash string, checks the labels and turns each bucket bound into a property key on every
 * call (about 1 µs here, a few percent of a signed request's CPU). Here an observation is three Map
 * lookups on values already in hand and an increment. Routes, methods and status codes are each a
 * small fixed set, so the number of series stays bounded.
 */
export class RequestDurationHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series: Series[] = [];
  private readonly byRoute = new Map<string, Map<string, Map<number, Series>>>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly bounds: readonly number[],
    registers: Registry[],
  ) {
    for (const registry of registers) registry.registerMetric(this as unknown as Metric);
  }

  observe(method: string, route: string, status: number, seconds: number): void {
    // prom-client refuses (throws) a value that is not finite; a duration always is.
    if (!Number.isFinite(seconds)) return;
    const series = this.seriesFor(method, route, status);
    series.sum += seconds;
    series.count += 1;
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (seconds <= bounds[i]!) {
        series.counts[i]! += 1;
        return;
      }
    }
  }

  private seriesFor(method: string, route: string, status: number): Series {
    let byMethod = this.byRoute.get(route);
    if (byMethod === undefined) this.byRoute.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (byStatus === undefined) byMethod.set(method, (byStatus = new Map()));
    let series = byStatus.get(status);
    if (series === undefined) {
      series = { labels: { method, route, status_code: status }, counts: this.bounds.map(() => 0), sum: 0, count: 0 };
      byStatus.set(status, series);
      this.series.push(series);
    }
    return series;
  }

  /** What the registry formats for /metrics: prom-client's Histogram values, series by series. */
  async getForPromString() {
    const bucket = `${this.name}_bucket`;
    const values: Record<string, unknown>[] = [];
    for (const s of this.series) {
      let cumulative = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        cumulative += s.counts[i]!;
        values.push({
          labels: { le: this.bounds[i] },
          sharedLabels: s.labels,
          value: cumulative,
          metricName: bucket,
          exemplar: null,
        });
      }
      values.push({
        labels: { le: '+Inf' },
        sharedLabels: s.labels,
        value: s.count,
        metricName: bucket,
        exemplar: null,
      });
      values.push({
        labels: {},
        sharedLabels: s.labels,
        value: s.sum,
        metricName: `${this.name}_sum`,
        exemplar: undefined,
      });
      values.push({
        labels: {},
        sharedLabels: s.labels,
        value: s.count,
        metricName: `${this.name}_count`,
        exemplar: undefined,
      });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** The JSON form (registry.getMetricsAsJSON): the series' labels folded into each value's. */
  async get() {
    const data = await this.getForPromString();
    data.values = data.values.map(({ sharedLabels, labels, ...rest }) => ({
      ...rest,
      labels: { ...(labels as object), ...(sharedLabels as object) },
    }));
    return data;
  }

  reset(): void {
    this.series.length = 0;
    this.byRoute.clear();
  }
}
