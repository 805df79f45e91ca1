/**
 * @module The OpenAPI 3.1 document of `axon serve` (`GET /openapi.json`), generated from the
 * same zod schemas the server checks request bodies with (`z.toJSONSchema`, draft 2020-12,
 * which OpenAPI 3.1 takes as is) and the response shapes of `views.ts`.
 */
import { z } from 'zod';
import { factInputSchema } from '../runs/facts.js';
import { flowInputSchema, runInputSchema } from '../runs/flow-api.js';
import { stepSubmissionSchema } from '../steps/step-submission.js';
import { RESPONSE_SCHEMAS } from './views.js';

type Json = Record<string, unknown>;

const schema = (s: z.ZodType, io: 'input' | 'output'): Json =>
  z.toJSONSchema(s, { io, unrepresentable: 'any' });

const REQUESTS = {
  FlowInput: flowInputSchema,
  RunInput: runInputSchema,
  StepInput: stepSubmissionSchema,
  FactInput: factInputSchema,
} as const;

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });
const body = (name: string): Json => ({
  required: true,
  content: { 'application/json': { schema: ref(name) } },
});
const ok = (name: string | null, description: string, list = false): Json => ({
  description,
  ...(name === null
    ? {}
    : {
        content: {
          'application/json': { schema: list ? { type: 'array', items: ref(name) } : ref(name) },
        },
      }),
});
const errors: Json = {
  default: ok('Error', 'An error: `{ error: { code, message, details }, correlation_id }`'),
};
const id = (name: string): Json => ({
  name,
  in: 'path',
  required: true,
  schema: { type: 'string' },
});

/** The OpenAPI document; `version` is the package's. */
export function openApiDocument(version: string): Json {
  const schemas: Record<string, Json> = {};
  for (const [name, s] of Object.entries(REQUESTS)) schemas[name] = schema(s, 'input');
  for (const [name, s] of Object.entries(RESPONSE_SCHEMAS)) schemas[name] = schema(s, 'output');
  const op = (summary: string, responses: Json, extra: Json = {}): Json => ({
    summary,
    ...extra,
    responses: { ...responses, ...errors },
  });
  const open: Json = { security: [] };
  return {
    openapi: '3.1.0',
    info: {
      title: 'axon',
      version,
      description: 'Flows, runs, steps, facts, checkpoints and pools of an axon runtime.',
    },
    components: {
      schemas,
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
    },
    security: [{ bearer: [] }],
    paths: {
      // Public: no key needed, whatever keys are configured.
      '/healthz': { get: op('Liveness', { 200: ok(null, '`{ "status": "ok" }`') }, open) },
      '/metrics': { get: op('Prometheus text', { 200: ok(null, 'The metrics') }, open) },
      '/openapi.json': {
        get: op('This document', { 200: ok(null, 'OpenAPI 3.1, as JSON') }, open),
      },
      '/v1/flows': {
        post: op(
          'Store a flow by content (NERVE-4001)',
          { 201: ok('FlowCreated', 'Stored'), 200: ok('FlowCreated', 'Stored before') },
          { requestBody: body('FlowInput') },
        ),
      },
      '/v1/flows/{flow_id}': {
        get: op('A flow', { 200: ok('Flow', 'The flow') }, { parameters: [id('flow_id')] }),
      },
      '/v1/flows:by-hash/{hash}': {
        get: op('A flow by hash', { 200: ok('Flow', 'The flow') }, { parameters: [id('hash')] }),
      },
      '/v1/flows/{flow_id}/runs': {
        post: op(
          'Start a run (NERVE-4002)',
          { 201: ok('Run', 'The run') },
          { parameters: [id('flow_id')], requestBody: body('RunInput') },
        ),
      },
      '/v1/runs/{run_id}': {
        get: op('A run', { 200: ok('Run', 'The run') }, { parameters: [id('run_id')] }),
      },
      '/v1/runs/{run_id}/cancel': {
        post: op(
          'Cancel a run',
          { 202: ok('Cancelling', 'Cancelling') },
          { parameters: [id('run_id')] },
        ),
      },
      '/v1/runs/{run_id}/complete': {
        post: op('Complete a run', { 200: ok('Run', 'The run') }, { parameters: [id('run_id')] }),
      },
      '/v1/runs/{run_id}/steps': {
        post: op(
          'Submit a step, idempotent by client_token (NERVE-4003)',
          { 201: ok('StepCreated', 'Submitted'), 200: ok('StepCreated', 'Submitted before') },
          { parameters: [id('run_id')], requestBody: body('StepInput') },
        ),
      },
      '/v1/steps/{step_id}': {
        get: op('A step', { 200: ok('Step', 'The step') }, { parameters: [id('step_id')] }),
      },
      '/v1/steps/{step_id}/cancel': {
        post: op(
          'Cancel a step',
          { 202: ok('Cancelling', 'Cancelling') },
          { parameters: [id('step_id')] },
        ),
      },
      '/v1/steps/{step_id}/stream': {
        get: op(
          "A step's events as Server-Sent Events, from Last-Event-ID on (STREAM-2001)",
          {
            200: {
              description: 'text/event-stream: `id: <seq>`, `event: <type>`, `data: <json>`',
              content: { 'text/event-stream': { schema: { type: 'string' } } },
            },
          },
          {
            parameters: [
              id('step_id'),
              { name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string' } },
            ],
          },
        ),
      },
      '/v1/runs/{run_id}/facts': {
        get: op(
          "A run's facts in append order",
          { 200: ok('Fact', 'The facts', true) },
          {
            parameters: [
              id('run_id'),
              { name: 'type', in: 'query', schema: { type: 'string' } },
              { name: 'after', in: 'query', schema: { type: 'string' } },
              { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1 } },
            ],
          },
        ),
        post: op(
          'Append a fact (NERVE-4004)',
          { 201: ok('Fact', 'The fact') },
          { parameters: [id('run_id')], requestBody: body('FactInput') },
        ),
      },
      '/v1/runs/{run_id}/checkpoint': {
        post: op(
          'Checkpoint a run (NERVE-4005)',
          { 201: ok('Checkpoint', 'The checkpoint') },
          { parameters: [id('run_id')] },
        ),
      },
      '/v1/runs/{run_id}/checkpoints': {
        get: op(
          "A run's checkpoints",
          { 200: ok('Checkpoint', 'The checkpoints', true) },
          { parameters: [id('run_id')] },
        ),
      },
      '/v1/pools': { get: op('The pools', { 200: ok('Pool', 'The pools', true) }) },
      '/v1/pools/{pool_id}': {
        get: op('A pool', { 200: ok('Pool', 'The pool') }, { parameters: [id('pool_id')] }),
      },
      '/v1/pools/provision': {
        post: op('Provision a pool (501 unless a provisioner is configured)', {}),
      },
    },
  };
}
