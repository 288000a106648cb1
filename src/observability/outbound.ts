/**
 * Client spans for the service's own outbound HTTP calls (wallet settlements, webhook deliveries).
 * Tracing installs a tracer here when it is configured; otherwise `traced` just runs the call, and
 * no tracing code is loaded at all.
 */
export interface OutboundTracer {
  call<T extends { statusCode: number }>(
    name: string,
    url: URL,
    headers: Record<string, string>,
    run: () => Promise<T>,
  ): Promise<T>;
}

let installed: OutboundTracer | null = null;

/** Process-wide, like OpenTelemetry's own global provider: the last traced app in a process wins. */
export function installOutboundTracer(tracer: OutboundTracer | null): void {
  installed = tracer;
}

/** Runs `run` inside a client span; `headers` receives the W3C traceparent before the call. */
export function traced<T extends { statusCode: number }>(
  name: string,
  url: URL,
  headers: Record<string, string>,
  run: () => Promise<T>,
): Promise<T> {
  return installed ? installed.call(name, url, headers, run) : run();
}
