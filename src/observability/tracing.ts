/**
 * OpenTelemetry tracing, loaded (by a dynamic import in src/app.ts) only when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set: with tracing off none of this code or the SDK is loaded.
 * Spans are made by hand at the three places that matter (HTTP in, HTTP out, store transactions)
 * rather than by monkey-patching modules, which would depend on import order.
 */
import type { IncomingMessage } from 'node:http';
import {
  type Context,
  context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  ROOT_CONTEXT,
  SpanKind,
  type SpanOptions,
  SpanStatusCode,
  trace,
  type Span,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { Dialect } from '../store/database';
import type { StoreSpans } from './instrumented-db';
import type { OutboundTracer } from './outbound';

export interface TracingOptions {
  otlpEndpoint: string;
  serviceName: string;
  dialect: Dialect;
}

export class Tracing implements StoreSpans, OutboundTracer {
  private readonly provider: BasicTracerProvider;
  private readonly tracer;
  private readonly propagator = new W3CTraceContextPropagator();
  private readonly serverSpans = new WeakMap<IncomingMessage, Span>();

  constructor(private readonly options: TracingOptions) {
    // Spans follow the request through awaits; a context manager set earlier in the process is kept.
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    this.provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': options.serviceName }),
      // Exported in batches off the request path; OTLP/HTTP appends /v1/traces to the base endpoint.
      spanProcessors: [
        new BatchSpanProcessor(new OTLPTraceExporter({ url: `${options.otlpEndpoint}/v1/traces` }), {
          scheduledDelayMillis: 500,
        }),
      ],
    });
    this.tracer = this.provider.getTracer('round-betting-service');
  }

  /**
   * Starts the server span as the request arrives and returns its trace id, which becomes the
   * request id: logs, the x-request-id header and error bodies' trace_id then name the trace. A
   * caller's W3C traceparent makes the span its child, in the caller's trace.
   */
  startServerSpan(req: IncomingMessage): string {
    const parent = this.propagator.extract(ROOT_CONTEXT, req.headers, defaultTextMapGetter);
    const span = this.tracer.startSpan(
      req.method ?? 'HTTP',
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': req.method ?? '' } },
      parent,
    );
    this.serverSpans.set(req, span);
    return span.spanContext().traceId;
  }

  /** Runs `next` (the rest of the request's hooks and its handler) with the server span active. */
  withServerSpan(req: IncomingMessage, next: () => void): void {
    const span = this.serverSpans.get(req);
    if (span) context.with(trace.setSpan(context.active(), span), next);
    else next();
  }

  endServerSpan(req: IncomingMessage, route: string, statusCode: number): void {
    const span = this.serverSpans.get(req);
    if (!span) return;
    this.serverSpans.delete(req);
    span.updateName(`${req.method} ${route}`);
    span.setAttributes({ 'http.route': route, 'http.response.status_code': statusCode });
    if (statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  }

  transaction<T>(label: string | undefined, run: () => Promise<T>): Promise<T> {
    const name = label ? `db.transaction ${label}` : 'db.transaction';
    const options: SpanOptions = { kind: SpanKind.CLIENT, attributes: { 'db.system.name': this.options.dialect } };
    return this.tracer.startActiveSpan(name, options, this.parentFor(options), (span) => this.finish(span, run()));
  }

  call<T extends { statusCode: number }>(
    name: string,
    url: URL,
    headers: Record<string, string>,
    run: () => Promise<T>,
  ): Promise<T> {
    const attributes = { 'http.request.method': 'POST', 'server.address': url.hostname, 'url.path': url.pathname };
    const options: SpanOptions = { kind: SpanKind.CLIENT, attributes };
    return this.tracer.startActiveSpan(name, options, this.parentFor(options), (span) => {
      this.propagator.inject(context.active(), headers, defaultTextMapSetter);
      return this.finish(
        span,
        run().then((res) => {
          span.setAttribute('http.response.status_code', res.statusCode);
          if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
          return res;
        }),
      );
    });
  }

  /**
   * The context a new span starts in. Work a request starts without awaiting it (a sandbox engine
   * started by a test operator's first call, a loop it schedules) keeps that request's context for
   * as long as it runs. Once the span it would join has ended, the work starts a trace of its own,
   * linked to that span, rather than adding to a finished request's trace for hours. The usual
   * case (the request still open, or no span at all) allocates nothing here.
   */
  private parentFor(options: SpanOptions): Context {
    const active = context.active();
    const parent = trace.getSpan(active);
    // Only the SDK's own spans say whether they ended; a caller's remote parent never has.
    if (parent === undefined || (parent as Partial<ReadableSpan>).ended !== true) return active;
    options.links = [{ context: parent.spanContext() }];
    return ROOT_CONTEXT;
  }

  /** Sends what is still buffered; called on shutdown. */
  async shutdown(): Promise<void> {
    await this.provider.shutdown();
  }

  /** Exposed for tests and for the flush on shutdown. */
  async flush(): Promise<void> {
    await this.provider.forceFlush();
  }

  private async finish<T>(span: Span, work: Promise<T>): Promise<T> {
    try {
      return await work;
    } catch (error) {
      span.recordException(error as Error);
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      span.end();
    }
  }
}
