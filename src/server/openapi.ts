/**
 * @module The OpenAPI 3.1 document of `axon serve` (`GET /openapi.json`), generated from the
 * same zod schemas the server checks request bodies with (`z.toJSONSchema`, draft 2020-12,
 * which OpenAPI 3.1 takes as is) and the response shapes of `views.ts`.
 */
import { z } from 'zod';
import { factInputSchema } from '../runs/facts.js';
import { flowInputSchema, runInputSchema } from '../runs/flow-api.js';
import { stepSubmissionSchema } from '../steps/step-submission.js';
import { DEFAULT_RUN_LIMIT, MAX_RUN_LIMIT, RUN_STATUSES } from './run-list-routes.js';
import { threadTriggerSchema } from '../workflows/workflow-definition.js';
import { RESPONSE_SCHEMAS, THREAD_SCHEMAS } from './views.js';
import { AGENT_SCHEMAS } from './agent-views.js';
import { AGENT_REQUESTS, agentPaths } from './openapi-agents.js';

type Json = Record<string, unknown>;

const schema = (s: z.ZodType, io: 'input' | 'output'): Json =>
  z.toJSONSchema(s, { io, unrepresentable: 'any' });

const REQUESTS = {
  FlowInput: flowInputSchema,
  RunInput: runInputSchema,
  StepInput: stepSubmissionSchema,
  FactInput: factInputSchema,
  ThreadInput: threadTriggerSchema,
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

/** The query of `GET /v1/runs` (`run-list-routes.ts`). */
const RUN_LIST_PARAMETERS: Json[] = [
  {
    name: 'status',
    in: 'query',
    required: false,
    description: `Only runs with one of these statuses, comma-separated: ${RUN_STATUSES.join(', ')}`,
    schema: { type: 'string' },
    example: 'running,waiting',
  },
  {
    name: 'limit',
    in: 'query',
    required: false,
    description: 'How many runs at most, the newest',
    schema: { type: 'integer', minimum: 1, maximum: MAX_RUN_LIMIT, default: DEFAULT_RUN_LIMIT },
  },
  {
    name: 'before',
    in: 'query',
    required: false,
    description:
      'Only runs created before this one (the last run_id of the page before): the next page',
    schema: { type: 'string' },
  },
  {
    name: 'entry',
    in: 'query',
    required: false,
    description: "Only runs of this entry (the Run's entry: its flow's or agent's name)",
    schema: { type: 'string', minLength: 1, maxLength: 256 },
    example: 'hello',
  },
  {
    name: 'since',
    in: 'query',
    required: false,
    description: 'Only runs created at or after this ISO 8601 date-time (with a zone)',
    schema: { type: 'string', format: 'date-time' },
  },
  {
    name: 'until',
    in: 'query',
    required: false,
    description: 'Only runs created before this ISO 8601 date-time (with a zone)',
    schema: { type: 'string', format: 'date-time' },
  },
];

/** The OpenAPI document; `version` is the package's. */
export function openApiDocument(version: string): Json {
  const schemas: Record<string, Json> = {};
  for (const [name, s] of Object.entries(REQUESTS)) schemas[name] = schema(s, 'input');
  for (const [name, s] of Object.entries(RESPONSE_SCHEMAS)) schemas[name] = schema(s, 'output');
  for (const [name, s] of Object.entries(THREAD_SCHEMAS)) schemas[name] = schema(s, 'output');
  for (const [name, s] of Object.entries(AGENT_REQUESTS)) schemas[name] = schema(s, 'input');
  for (const [name, s] of Object.entries(AGENT_SCHEMAS)) schemas[name] = schema(s, 'output');
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
      description:
        'Flows, runs, steps, facts, checkpoints and pools of an axon runtime; its durable agents, events and schedules.',
    },
    components: {
      schemas,
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
    },
    security: [{ bearer: [] }],
    paths: {
      // Public: no key needed, whatever keys are configured.
      '/healthz': { get: op('Liveness', { 200: ok(null, '`{ "status": "ok" }`') }, open) },
      // With keys, a key with the metrics or admin permission (docs/security.md).
      '/metrics': {
        get: op('Prometheus text (with keys: a metrics or admin key)', {
          200: ok(null, 'The metrics'),
        }),
      },
      '/openapi.json': {
        get: op('This document', { 200: ok(null, 'OpenAPI 3.1, as JSON') }, open),
      },
      '/ui': {
        get: op(
          'The trace UI: an HTML page, its assets under /ui/ (docs/trace-ui.md)',
          {
            200: {
              description: 'The page; it reads the API below with the key it is given',
              content: { 'text/html': { schema: { type: 'string' } } },
            },
          },
          open,
        ),
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
      '/v1/runs': {
        get: op(
          "The caller's runs, newest first (?status, ?entry, ?since, ?until, ?limit, ?before)",
          { 200: ok('Run', 'The runs', true) },
          { parameters: RUN_LIST_PARAMETERS },
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
        get: op(
          "A run's steps in creation order",
          { 200: ok('Step', 'The steps', true) },
          { parameters: [id('run_id')] },
        ),
        post: op(
          'Submit a step, idempotent by client_token (NERVE-4003)',
          { 201: ok('StepCreated', 'Submitted'), 200: ok('StepCreated', 'Submitted before') },
          { parameters: [id('run_id')], requestBody: body('StepInput') },
        ),
      },
      '/v1/runs/{run_id}/stream': {
        get: op(
          "A run's changes as Server-Sent Events (`step` and `run` frames)",
          {
            200: {
              description: 'text/event-stream: `id: <n>`, `event: run|step`, `data: <json>`',
              content: { 'text/event-stream': { schema: { type: 'string' } } },
            },
          },
          { parameters: [id('run_id')] },
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
      '/v1/workflows': {
        get: op('The workflows the server runs (docs/workflows.md)', {
          200: ok('Workflow', 'The workflows', true),
        }),
      },
      '/v1/workflows/{name}': {
        get: op(
          'A workflow',
          { 200: ok('Workflow', 'The workflow') },
          { parameters: [id('name')] },
        ),
      },
      '/v1/workflows/{name}/threads': {
        post: op(
          'Start a thread of a workflow: it runs, or waits its turn (overflow queue); 429 QUEUE_FULL past the limits',
          { 201: ok('Thread', 'The thread, queued or started') },
          { parameters: [id('name')], requestBody: body('ThreadInput') },
        ),
      },
      '/v1/threads': {
        get: op(
          "The caller's threads, newest first (?workflow=, ?status=a,b, ?limit=1..500, default 50, ?before=thread_id)",
          { 200: ok('Thread', 'The threads', true) },
          {
            parameters: [
              { name: 'workflow', in: 'query', required: false, schema: { type: 'string' } },
              { name: 'status', in: 'query', required: false, schema: { type: 'string' } },
              {
                name: 'limit',
                in: 'query',
                required: false,
                schema: { type: 'integer', minimum: 1, maximum: 500, default: 50 },
              },
              {
                name: 'before',
                in: 'query',
                required: false,
                description: 'Only threads created before this one (the last of the page before)',
                schema: { type: 'string' },
              },
            ],
          },
        ),
      },
      '/v1/threads/{thread_id}': {
        get: op(
          'A thread, with its turns',
          { 200: ok('Thread', 'The thread') },
          {
            parameters: [id('thread_id')],
          },
        ),
      },
      '/v1/threads/{thread_id}/kill': {
        post: op(
          'Kill a thread: its running turn is cancelled, it ends killed (409 when it has ended)',
          { 200: ok('Thread', 'The thread, killed') },
          { parameters: [id('thread_id')] },
        ),
      },
      '/v1/threads/{thread_id}/stream': {
        get: op(
          "A thread's turns' events, then thread_end, as Server-Sent Events, from Last-Event-ID (<turn>.<seq>) on",
          {
            200: {
              description:
                'text/event-stream: `id: <turn>.<seq>`, `event: <type>`, `data: <json>` (the step event with `turn` and `role`); last `event: thread_end` with the Thread',
              content: { 'text/event-stream': { schema: { type: 'string' } } },
            },
          },
          {
            parameters: [
              id('thread_id'),
              { name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string' } },
            ],
          },
        ),
      },
      '/v1/pools': { get: op('The pools', { 200: ok('Pool', 'The pools', true) }) },
      '/v1/pools/{pool_id}': {
        get: op('A pool', { 200: ok('Pool', 'The pool') }, { parameters: [id('pool_id')] }),
      },
      '/v1/pools/provision': {
        post: op('Provision a pool (501 unless a provisioner is configured)', {}),
      },
      ...agentPaths({ op, ok, body, id }),
    },
  };
}
