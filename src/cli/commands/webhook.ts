import { DomainError } from '../../errors/codes';
import type { DeliveryStatus } from '../../webhooks/deliveries';
import { type CliCommand, integerOption, MAX_OVERLAP_MS, stringOption, UsageError } from '../cli-kit';

/*
 * Options go through stringOption/integerOption, which refuse an empty value: read as absent, `--events=`
 * subscribed to every event, `--overlap-ms=` took the 24 h default and `--starting-after=` restarted paging.
 */
function eventList(v: string | boolean | undefined): string[] | undefined {
  const raw = stringOption(v, 'events');
  return raw === undefined
    ? undefined
    : raw
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
}

/** The API's bound on a page of deliveries: 1 to 500. */
const MAX_DELIVERIES = 500;

const endpointId = { type: 'string', required: true, description: 'the endpoint id (we_…)' } as const;

/** Webhook endpoints and deliveries, administered across operators (the CLI acts for the service). */
export const webhookCommands: CliCommand[] = [
  {
    path: ['webhook', 'add'],
    summary: 'Create a webhook endpoint; prints its id and secret (the secret is shown only here).',
    options: {
      operator: { type: 'string', required: true, description: 'the operator id (op_…)' },
      url: { type: 'string', required: true, description: 'target URL (https, public address)' },
      events: { type: 'string', description: 'comma-separated event kinds (default: all)' },
      surface: {
        type: 'string',
        description: 'A (x-service-signature + Standard Webhooks) or B (operator request signing); default A',
      },
      disabled: { type: 'boolean', description: 'create it disabled' },
    },
    async run(app, v) {
      const surface = stringOption(v.surface, 'surface')?.toUpperCase() ?? 'A';
      if (surface !== 'A' && surface !== 'B') throw new DomainError('VALIDATION_FAILED', '--surface must be A or B');
      return app.services.webhooks.createEndpoint(String(v.operator), {
        url: String(v.url),
        events: eventList(v.events),
        surface,
        enabled: !v.disabled,
      });
    },
  },
  {
    path: ['webhook', 'list'],
    summary: "List an operator's webhook endpoints (never their secrets).",
    options: { operator: { type: 'string', required: true, description: 'the operator id (op_…)' } },
    async run(app, v) {
      // An empty list for a mistyped id would read as "this operator has no endpoints": be the NOT_FOUND add gives.
      await app.services.operators.get(String(v.operator));
      return { endpoints: await app.services.webhooks.listEndpoints(String(v.operator)) };
    },
  },
  {
    path: ['webhook', 'update'],
    summary: 'Change an endpoint: --url, --events, --enable or --disable.',
    options: {
      id: endpointId,
      url: { type: 'string', description: 'new target URL' },
      events: { type: 'string', description: 'comma-separated event kinds' },
      enable: { type: 'boolean', description: 'enable the endpoint' },
      disable: { type: 'boolean', description: 'disable it (queued deliveries are cancelled)' },
    },
    async run(app, v) {
      if (v.enable && v.disable) throw new UsageError('give --enable or --disable, not both');
      const url = stringOption(v.url, 'url');
      const events = eventList(v.events);
      const patch = {
        ...(url !== undefined ? { url } : {}),
        ...(events !== undefined ? { events } : {}),
        ...(v.enable ? { enabled: true } : v.disable ? { enabled: false } : {}),
      };
      if (Object.keys(patch).length === 0)
        throw new DomainError('VALIDATION_FAILED', 'nothing to change: give --url, --events, --enable or --disable');
      return app.services.webhooks.updateEndpoint(null, String(v.id), patch);
    },
  },
  {
    path: ['webhook', 'delete'],
    summary: 'Delete an endpoint; deliveries still queued for it are cancelled.',
    options: { id: endpointId },
    async run(app, v) {
      await app.services.webhooks.deleteEndpoint(null, String(v.id));
      return { endpoint_id: v.id, deleted: true };
    },
  },
  {
    path: ['webhook', 'rotate-secret'],
    summary:
      'Issue a new endpoint secret; the old one keeps signing too for the overlap ' +
      '(SECRET_ROTATION_OVERLAP_MS or --overlap-ms).',
    options: { id: endpointId, 'overlap-ms': { type: 'string', description: 'override the overlap in milliseconds' } },
    async run(app, v) {
      return app.services.webhooks.rotateSecret(
        null,
        String(v.id),
        integerOption(v['overlap-ms'], 'overlap-ms', 0, MAX_OVERLAP_MS),
      );
    },
  },
  {
    path: ['webhook', 'deliveries'],
    summary: 'List deliveries of an endpoint, newest first (--status dead for the dead letters).',
    options: {
      endpoint: { type: 'string', required: true, description: 'the endpoint id (we_…)' },
      status: { type: 'string', description: 'pending | delivered | dead | cancelled' },
      limit: { type: 'string', description: `at most this many (default 50, 1 to ${MAX_DELIVERIES})` },
      'starting-after': { type: 'string', description: 'the last delivery id of the previous page: the next page' },
    },
    async run(app, v) {
      const filter = {
        endpointId: String(v.endpoint),
        status: stringOption(v.status, 'status') as DeliveryStatus | undefined,
        startingAfter: stringOption(v['starting-after'], 'starting-after'),
        limit: integerOption(v.limit, 'limit', 1, MAX_DELIVERIES),
      };
      const deliveries = await app.services.webhooks.listDeliveries(null, filter);
      return { deliveries };
    },
  },
  {
    path: ['webhook', 'delivery'],
    summary: 'Show one delivery with every attempt (status, latency, response excerpt).',
    options: { id: { type: 'string', required: true, description: 'the delivery id (dlv_…)' } },
    async run(app, v) {
      return app.services.webhooks.getDelivery(null, String(v.id));
    },
  },
  {
    path: ['webhook', 'resend'],
    summary: 'Re-send a dead (or delivered) delivery as a new delivery with a fresh set of attempts.',
    options: { delivery: { type: 'string', required: true, description: 'the delivery id (dlv_…)' } },
    async run(app, v) {
      return app.services.webhooks.resend(null, String(v.delivery));
    },
  },
  {
    path: ['webhook', 'test'],
    summary: 'Queue a webhook.test event for an endpoint (the running service sends it).',
    options: { id: endpointId },
    async run(app, v) {
      return app.services.webhooks.sendTestEvent(null, String(v.id));
    },
  },
];
