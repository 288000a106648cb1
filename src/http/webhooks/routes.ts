import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { absentBodyAsEmpty } from '../json-body';
import { keyedPost, replayable, replayableErrors } from '../keyed-write';
import { guardSurface } from '../surface/guard-surface';
import type { Surface } from '../surface/surface';
import type { AppServices } from '../../services';
import type { DeliveryStatus } from '../../webhooks/deliveries';
import { MAX_ENDPOINTS_PER_OPERATOR } from '../../webhooks/endpoints';
import { webhookSchemaDocument } from '../../webhooks/payloads';
import {
  authHeadersFor,
  keyedHeadersFor,
  DeliveryDetail,
  DeliveryIdParams,
  DeliveryList,
  DeliveryQuery,
  DeliveryView,
  EndpointCreateBody,
  EndpointIdParams,
  EndpointList,
  EndpointPatchBody,
  EndpointQuery,
  EndpointView,
  EndpointWithSecret,
  ErrorBody,
  NoArgumentsBody,
  RotateBody,
  SIGNED_ROUTE_ERRORS,
  VerifyBody,
  VerifyResult,
} from './schemas';

/** Endpoints per page of `GET /webhook-endpoints` when the request does not say: an operator's whole list. */
const DEFAULT_ENDPOINT_PAGE = MAX_ENDPOINTS_PER_OPERATOR;

const errors = SIGNED_ROUTE_ERRORS;

/**
 * The webhook management API, mounted once per surface (`/api/public/v1` and `/v1`) with that
 * surface's authentication and error format. Routes only translate HTTP to WebhookService calls.
 * Its POSTs honour an Idempotency-Key (keyedPost): a keyed retry of create, rotate-secret, test or
 * resend gets the first answer instead of a second endpoint, secret or delivery. The answers that
 * carry a secret are stored sealed. verify-signature only computes, and its body holds a secret that
 * must not be stored, so it is never keyed. PATCH and DELETE set a state: repeating them is harmless.
 */
export function webhookRoutes(surface: Surface) {
  return async function register(app: FastifyInstance, services: AppServices): Promise<void> {
    const r = app.withTypeProvider<TypeBoxTypeProvider>();
    guardSurface(app, surface, services);
    const headers = authHeadersFor(surface);
    const keyedHeaders = keyedHeadersFor(surface);
    const tags = ['Webhooks'];
    const w = services.webhooks;
    const keyed = { idempotency: services.idempotency, surface };

    r.post(
      '/webhook-endpoints',
      {
        schema: {
          summary: 'Create a webhook endpoint (the secret is returned only here)',
          tags,
          headers: keyedHeaders,
          body: EndpointCreateBody,
          response: { 201: replayable(EndpointWithSecret), ...replayableErrors(errors) },
        },
      },
      async (req, reply) => {
        const input = { ...req.body, surface: req.body.surface ?? surface.name };
        return keyedPost(req, reply, keyed, { status: 201, sealed: true }, (inTx) =>
          w.createEndpoint(req.operator!.id, input, inTx),
        );
      },
    );

    r.get(
      '/webhook-endpoints',
      {
        schema: {
          summary: 'List your webhook endpoints, oldest first',
          description:
            'Oldest first (created_at, then endpoint_id). `limit`: default 20, maximum 100 (an operator has at ' +
            'most 20 endpoints, so the default page is the whole list). While `has_more` is true, pass the ' +
            'last `endpoint_id` of the page as `starting_after`; an id that is not one of your endpoints is ' +
            '400 VALIDATION_FAILED.',
          tags,
          headers,
          querystring: EndpointQuery,
          response: { 200: EndpointList, ...errors },
        },
      },
      async (req) => {
        const limit = req.query.limit === undefined ? DEFAULT_ENDPOINT_PAGE : Number(req.query.limit);
        const page = await w.endpointPage(req.operator!.id, { limit, startingAfter: req.query.starting_after });
        return { endpoints: page.endpoints, has_more: page.hasMore };
      },
    );

    r.get(
      '/webhook-endpoints/:endpoint_id',
      {
        schema: {
          summary: 'One webhook endpoint',
          tags,
          headers,
          params: EndpointIdParams,
          response: { 200: EndpointView, ...errors },
        },
      },
      async (req) => w.getEndpoint(req.operator!.id, req.params.endpoint_id),
    );

    r.patch(
      '/webhook-endpoints/:endpoint_id',
      {
        schema: {
          summary: 'Change an endpoint: URL, event kinds, enabled (disabling cancels what is queued for it)',
          tags,
          headers,
          params: EndpointIdParams,
          body: EndpointPatchBody,
          response: { 200: EndpointView, ...errors },
        },
      },
      async (req) => w.updateEndpoint(req.operator!.id, req.params.endpoint_id, req.body),
    );

    r.delete(
      '/webhook-endpoints/:endpoint_id',
      {
        schema: {
          summary: 'Delete an endpoint; deliveries still queued for it are cancelled',
          tags,
          headers,
          params: EndpointIdParams,
          response: { 204: Type.Null(), ...errors },
        },
      },
      async (req, reply) => {
        await w.deleteEndpoint(req.operator!.id, req.params.endpoint_id);
        return reply.status(204).send(null);
      },
    );

    r.post(
      '/webhook-endpoints/:endpoint_id/rotate-secret',
      {
        preValidation: absentBodyAsEmpty,
        schema: {
          summary: 'Issue a new endpoint secret; the previous one keeps signing alongside it for the overlap',
          description:
            'During the overlap every delivery carries one signature per secret, ' +
            'so receivers holding either accept it.',
          tags,
          headers: keyedHeaders,
          params: EndpointIdParams,
          body: Type.Optional(RotateBody),
          response: { 200: replayable(EndpointWithSecret), ...replayableErrors(errors) },
        },
      },
      async (req, reply) =>
        keyedPost(req, reply, keyed, { status: 200, sealed: true }, (inTx) =>
          w.rotateSecret(req.operator!.id, req.params.endpoint_id, req.body?.overlap_ms, inTx),
        ),
    );

    r.post(
      '/webhook-endpoints/:endpoint_id/test',
      {
        preValidation: absentBodyAsEmpty,
        schema: {
          summary: 'Queue a webhook.test event for this endpoint',
          tags,
          headers: keyedHeaders,
          params: EndpointIdParams,
          body: Type.Optional(NoArgumentsBody),
          response: { 202: replayable(DeliveryView), ...replayableErrors(errors) },
        },
      },
      async (req, reply) =>
        keyedPost(req, reply, keyed, { status: 202 }, (inTx) =>
          w.sendTestEvent(req.operator!.id, req.params.endpoint_id, inTx),
        ),
    );

    r.get(
      '/webhook-deliveries',
      {
        schema: {
          summary: 'Your webhook deliveries, newest first (status=dead lists dead letters)',
          description:
            'Newest first (created_at descending, then delivery_id). `limit`: default 50, maximum 500. ' +
            'While `has_more` is true, pass the last `delivery_id` of the page as `starting_after`; an id that ' +
            'is not one of your deliveries is 400 VALIDATION_FAILED.',
          tags,
          headers,
          querystring: DeliveryQuery,
          response: { 200: DeliveryList, ...errors },
        },
      },
      async (req) => {
        const q = req.query;
        const page = await w.deliveryPage(req.operator!.id, {
          status: q.status as DeliveryStatus | undefined,
          endpointId: q.endpoint_id,
          before: q.before === undefined ? undefined : Number(q.before),
          startingAfter: q.starting_after,
          limit: q.limit === undefined ? 50 : Number(q.limit),
        });
        return { deliveries: page.deliveries, has_more: page.hasMore };
      },
    );

    r.get(
      '/webhook-deliveries/:delivery_id',
      {
        schema: {
          summary: 'One delivery with every attempt',
          tags,
          headers,
          params: DeliveryIdParams,
          response: { 200: DeliveryDetail, ...errors },
        },
      },
      async (req) => w.getDelivery(req.operator!.id, req.params.delivery_id),
    );

    r.post(
      '/webhook-deliveries/:delivery_id/resend',
      {
        preValidation: absentBodyAsEmpty,
        schema: {
          summary: 'Re-send a dead (or delivered) delivery as a new delivery with a fresh set of attempts',
          tags,
          headers: keyedHeaders,
          params: DeliveryIdParams,
          body: Type.Optional(NoArgumentsBody),
          response: { 202: replayable(DeliveryView), ...replayableErrors(errors) },
        },
      },
      async (req, reply) =>
        keyedPost(req, reply, keyed, { status: 202 }, (inTx) =>
          w.resend(req.operator!.id, req.params.delivery_id, inTx),
        ),
    );

    r.post(
      '/webhooks/verify-signature',
      {
        bodyLimit: 1_100_000,
        config: { replay: 'no-effect' },
        schema: {
          summary: 'Check an x-service-signature against an endpoint secret and body',
          description:
            'Reproduces the check a receiver makes: ' +
            'HMAC-SHA256(endpoint_secret, "<t>.<body>") against each v1= of the header, ' +
            'and |now - t| within 5 minutes. ' +
            'No side effect, so no Idempotency-Key is needed.',
          tags,
          headers,
          body: VerifyBody,
          response: { 200: VerifyResult, ...errors },
        },
      },
      async (req) =>
        w.verifySignature({
          endpointSecret: req.body.endpoint_secret,
          body: req.body.body,
          signature: req.body.signature,
        }),
    );

    r.get(
      '/webhooks/schema',
      {
        schema: {
          summary: 'JSON Schema of every webhook payload (version v1)',
          description: 'The same schemas appear in this document under `webhooks`.',
          tags,
          headers,
          response: { 200: Type.Object({}, { additionalProperties: true }), ...errors },
        },
      },
      async () => webhookSchemaDocument(),
    );
  };
}
